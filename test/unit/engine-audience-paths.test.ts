import { afterEach, describe, expect, it } from 'vitest';
import { importProfiles } from '../../server/profiles/import';
import { database } from '../helpers/app-db';
import type { WorkflowDefinition } from '../../core/model/workflow';
import { advance, crowd, range, restartEngine, send, settle, start, startHarness, stepUsers, steps, workflow, type Harness } from '../fixtures/engine/harness';
import { seededRandom } from '../helpers/seeded-random';

// Audience paths (issue 37 §1): a branch step whose conditions read no event routes users as they enter it, at a
// start, in a bulk move and one user at a time; a branch step that reads `event` keeps waiting for events.

let h: Harness;
afterEach(async () => {
  await h.close();
});

type Profile = { plan?: string; seats?: number; country?: string };

function ndjson(profiles: Map<number, Profile>): ReadableStream<Uint8Array> {
  const text = [...profiles].map(([user, attributes]) => JSON.stringify({ user, attributes })).join('\n');
  return new ReadableStream({ start: (c) => (c.enqueue(new TextEncoder().encode(text)), c.close()) });
}

/** Seeded profiles of `users`: some have none, some lack a plan, seats and countries vary. */
function seededProfiles(users: number[], seed: number): Map<number, Profile> {
  const random = seededRandom(seed);
  const profiles = new Map<number, Profile>();
  for (const user of users) {
    if (random() < 0.1) continue; // no profile at all
    const plan = ['pro', 'team', 'free', undefined][Math.floor(random() * 4)];
    const profile: Profile = { seats: Math.floor(random() * 20), country: ['FR', 'DE', 'FI', 'US'][Math.floor(random() * 4)] };
    if (plan) profile.plan = plan;
    profiles.set(user, profile);
  }
  return profiles;
}

/** Three paths: two bitmap plans (one reading a crowd) and one per-user condition (startsWith has no plan). */
const PATHS = [
  { condition: 'profile.plan == "pro" && profile.seats >= 10', next: 'big_pro' },
  { condition: 'profile.plan in ["pro", "team"] || inCrowd("vip")', next: 'paid' },
  { condition: 'profile.country.startsWith("F")', next: 'french' },
];

/** Where each user should go, first match wins, computed from the profiles without the engine; null: stays. */
function expectedPath(profile: Profile | undefined, vip: boolean): string | null {
  if (profile?.plan === 'pro' && (profile.seats ?? 0) >= 10) return 'big_pro';
  if (profile?.plan === 'pro' || profile?.plan === 'team' || vip) return 'paid';
  if (profile?.country?.startsWith('F')) return 'french';
  return null;
}

function expectedByPath(users: number[], profiles: Map<number, Profile>, vips: Set<number>): Record<string, number[]> {
  const out: Record<string, number[]> = { big_pro: [], paid: [], french: [], plan: [] };
  for (const user of users) out[expectedPath(profiles.get(user), vips.has(user)) ?? 'plan'].push(user);
  return out;
}

const exits = [
  { name: 'big_pro', kind: 'direct' as const },
  { name: 'paid', kind: 'direct' as const },
  { name: 'french', kind: 'direct' as const },
];

async function usersByPath(instanceId: string): Promise<Record<string, number[]>> {
  const out: Record<string, number[]> = {};
  for (const step of ['big_pro', 'paid', 'french', 'plan']) out[step] = await stepUsers(h, instanceId, step);
  return out;
}

describe('audience paths: branch steps that read no event route users on entry', () => {
  it('a start puts exactly the right users on each path, the rest wait; a crowd update routes its joiners; the journal replays it', async () => {
    h = await startHarness(4);
    const users = range(0, 599);
    const profiles = seededProfiles(users, 37);
    const vips = new Set(users.filter((u) => u % 7 === 0));
    await crowd(h, 'vip', vips);
    await importProfiles(database(), h.tenantId, ndjson(profiles), 'ndjson');
    const wf = await workflow(h, { steps: [{ name: 'plan', kind: 'branch', branches: PATHS }, ...exits] });
    await crowd(h, 'c', users.slice(0, 400));
    const id = await start(h, wf, 'c');

    const expected = expectedByPath(users.slice(0, 400), profiles, vips);
    expect(Object.values(expected).every((path) => path.length > 0)).toBe(true); // the seed covers every path
    expect(await usersByPath(id)).toEqual(expected);
    expect(await steps(h, id)).toEqual(Object.fromEntries(Object.entries(expected).map(([step, list]) => [step, list.length])));

    await crowd(h, 'c', users);
    await settle(h, h.engine.updateInstanceCrowd(h.tenantId, id, { crowd: 'c' }));
    const all = expectedByPath(users, profiles, vips);
    expect(await usersByPath(id)).toEqual(all);

    await restartEngine(h); // checkpoint plus journal: the routed moves are what the engine rebuilds
    expect(await usersByPath(id)).toEqual(all);
  });

  it('one user entering by an event is routed at once, and so is a user an event moves into the step', async () => {
    h = await startHarness(2);
    const profiles = new Map<number, Profile>([
      [1, { plan: 'pro', seats: 12 }],
      [2, { plan: 'team' }],
      [3, { country: 'FR' }],
      [4, { plan: 'free', country: 'US' }],
    ]);
    await crowd(h, 'vip', []);
    await importProfiles(database(), h.tenantId, ndjson(profiles), 'ndjson');
    const triggered = await workflow(h, { entry: { event: 'signup', reentry: 'once' }, steps: [{ name: 'plan', kind: 'branch', branches: PATHS }, ...exits] });
    const afterOpen: WorkflowDefinition = {
      steps: [
        { name: 'wait', kind: 'branch', branches: [{ condition: 'event.type == "open"', next: 'plan' }] },
        { name: 'plan', kind: 'branch', branches: PATHS },
        ...exits,
      ],
    };
    const moved = await workflow(h, afterOpen);
    const triggeredId = await settle(h, h.engine.startInstance(h.tenantId, triggered, {}));
    await crowd(h, 'c', [1, 2, 3, 4]);
    const movedId = await start(h, moved, 'c');

    await send(h, [
      { user: 1, type: 'signup' },
      { user: 3, type: 'signup' },
      { user: 4, type: 'signup' },
      { user: 2, type: 'open' },
      { user: 3, type: 'open' },
    ]);
    expect(await usersByPath(triggeredId)).toEqual({ big_pro: [1], paid: [], french: [3], plan: [4] });
    expect(await usersByPath(movedId)).toEqual({ big_pro: [], paid: [2], french: [3], plan: [] });
    expect(await stepUsers(h, movedId, 'wait')).toEqual([1, 4]);
  });

  it('a timer moving users into the step routes them as one bulk move per branch', async () => {
    h = await startHarness(2);
    const users = range(0, 199);
    const profiles = seededProfiles(users, 3737);
    await crowd(h, 'vip', []);
    await importProfiles(database(), h.tenantId, ndjson(profiles), 'ndjson');
    const wf = await workflow(h, {
      steps: [{ name: 'tick', kind: 'timer', cron: '0 * * * * *', next: 'plan' }, { name: 'plan', kind: 'branch', branches: PATHS }, ...exits],
    });
    await crowd(h, 'c', users);
    const id = await start(h, wf, 'c');
    expect(await stepUsers(h, id, 'tick')).toEqual(users);
    await advance(h, 60_000);
    expect(await usersByPath(id)).toEqual(expectedByPath(users, profiles, new Set()));
  });

  it('a branch step that reads the event keeps its users until their events, even where a profile branch would match', async () => {
    h = await startHarness(2);
    await importProfiles(
      database(),
      h.tenantId,
      ndjson(
        new Map([
          [1, { plan: 'pro' }],
          [2, { plan: 'pro' }],
        ]),
      ),
      'ndjson',
    );
    const wf = await workflow(h, {
      steps: [
        {
          name: 'wait',
          kind: 'branch',
          branches: [
            { condition: 'event.type == "buy"', next: 'bought' },
            { condition: 'profile.plan == "pro"', next: 'pro' },
          ],
        },
        { name: 'bought', kind: 'direct' },
        { name: 'pro', kind: 'direct' },
      ],
    });
    await crowd(h, 'c', [1, 2, 3]);
    const id = await start(h, wf, 'c');
    expect(await steps(h, id)).toEqual({ wait: 3, bought: 0, pro: 0 });
    await send(h, [{ user: 1, type: 'view' }]);
    expect(await steps(h, id)).toEqual({ wait: 2, bought: 0, pro: 1 });
  });
});
