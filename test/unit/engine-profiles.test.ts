import { afterEach, describe, expect, it } from 'vitest';
import { importProfiles } from '../../server/profiles/import';
import { upsertProfiles } from '../../server/profiles/profiles';
import { advance, crowd, range, send, start, startHarness, stepUsers, workflow, type Harness } from '../fixtures/engine/harness';
import { database } from '../helpers/app-db';

let h: Harness;
afterEach(async () => {
  await h.close();
});

function ndjson(rows: Array<[number, Record<string, unknown>]>): ReadableStream<Uint8Array> {
  const text = rows.map(([user, attributes]) => JSON.stringify({ user, attributes })).join('\n');
  return new ReadableStream({ start: (c) => (c.enqueue(new TextEncoder().encode(text)), c.close()) });
}

describe('the engine reads profiles from the tenant profile index', () => {
  it('per event: a branch with a numeric range on the profile, after an import and a later merge', async () => {
    h = await startHarness(2);
    const wf = await workflow(h, {
      steps: [
        {
          name: 'entry',
          kind: 'branch',
          branches: [
            { condition: 'event.type == "open" && profile.age >= 30', next: 'older' },
            { condition: 'event.type == "open"', next: 'younger' },
          ],
        },
        { name: 'older', kind: 'direct' },
        { name: 'younger', kind: 'direct' },
      ],
    });
    await crowd(h, 'c', range(1, 6));
    await importProfiles(
      database(),
      h.tenantId,
      ndjson([
        [1, { age: 30 }],
        [2, { age: 29.5 }],
        [3, { age: '40' }],
        [4, { age: 65 }],
      ]),
      'ndjson',
    );
    const id = await start(h, wf, 'c');
    await upsertProfiles(database(), h.tenantId, [{ user: 2, attributes: { age: 31 } }]);
    await send(
      h,
      range(1, 6).map((user) => ({ user, type: 'open' })),
    );
    expect(await stepUsers(h, id, 'older')).toEqual([1, 2, 4]);
    expect(await stepUsers(h, id, 'younger')).toEqual([3, 5, 6]);
  });

  it('timers: a planned profile condition and a per-user one move exactly the matching users', async () => {
    h = await startHarness(2);
    const wf = await workflow(h, {
      steps: [
        { name: 'wait', kind: 'timer', cron: '0 * * * * *', condition: 'profile.plan == "pro" && profile.age >= 30', next: 'planned' },
        { name: 'planned', kind: 'timer', cron: '0 * * * * *', condition: 'profile.tz.startsWith("Europe/")', next: 'european' },
        { name: 'european', kind: 'direct' },
      ],
    });
    const users = range(0, 999);
    await crowd(h, 'c', users);
    await importProfiles(
      database(),
      h.tenantId,
      ndjson(users.map((u) => [u, { plan: u % 3 === 0 ? 'pro' : 'free', age: 18 + (u % 40), tz: u % 2 ? 'Europe/Paris' : 'Asia/Tokyo' }])),
      'ndjson',
    );
    const id = await start(h, wf, 'c');
    await advance(h, 60_000);
    await advance(h, 60_000);
    const pro30 = users.filter((u) => u % 3 === 0 && 18 + (u % 40) >= 30);
    expect(await stepUsers(h, id, 'planned')).toEqual(pro30.filter((u) => u % 2 === 0));
    expect(await stepUsers(h, id, 'european')).toEqual(pro30.filter((u) => u % 2 === 1));
  });
});
