import { afterEach, describe, expect, it } from 'vitest';
import { countsAsOf, stepUsersAsOf } from '../../server/engine/as-of';
import { updateTenantLimits } from '../../server/limits/limits';
import { applyJournalRetention } from '../../server/engine/journal-retention';
import { db, database } from '../helpers/app-db';
import type { Tenant } from '../../server/tenants/tenants';
import { openBuyJourney } from '../fixtures/journeys';
import { refusal } from '../helpers/app-error';
import { seededRandom } from '../helpers/seeded-random';
import { advance, crowd, range, restartEngine, send, settle, start, startHarness, stepUsers, workflow, type Harness } from '../fixtures/engine/harness';

// Point-in-time reads (issue 38 §2): seeded runs on the ManualClock (events, a branch timeout, hourly timers, a loop
// back, a restart) during which the test records the engine's own step sets at several moments; afterwards each
// moment's asOf answer must be exactly that record. Run once with a checkpoint after every batch of moves (the latest
// moments replay from a checkpoint) and once with checkpoints rarer than the run (every moment replays from the start).

const MINUTE = 60_000;

const definition = openBuyJourney;
const STEPS = definition.steps.map((s) => s.name);

type Moment = { at: number; steps: Record<string, number[]>; edges: Record<string, number>; entered: number };

let h: Harness;
afterEach(async () => {
  await h.close();
});

const tenantOf = async (h: Harness) => (await db().tenant.findUniqueOrThrow({ where: { id: h.tenantId } })) as Tenant;
const at = (ms: number) => new Date(ms).toISOString();

async function record(h: Harness, instanceId: string): Promise<Moment> {
  const steps: Record<string, number[]> = {};
  for (const step of STEPS) steps[step] = await stepUsers(h, instanceId, step);
  const counts = await h.engine.getCounts(h.tenantId, instanceId);
  return { at: h.clock.now(), steps, edges: counts.edges, entered: counts.entered };
}

/** A run of `rounds` rounds: the clock moves on 1–45 minutes (timers and timeouts fire), then a random batch of events. */
async function seededRun(h: Harness, seed: number, rounds: number): Promise<{ instanceId: string; moments: Moment[] }> {
  const next = seededRandom(seed);
  const users = range(1, 120);
  await crowd(h, 'all', users);
  const instanceId = await start(h, await workflow(h, definition as never), 'all');
  const moments = [await record(h, instanceId)];
  for (let round = 0; round < rounds; round++) {
    await advance(h, (1 + Math.floor(next() * 45)) * MINUTE);
    if (round === Math.floor(rounds / 2)) await restartEngine(h); // the rest of the run on shards rebuilt by recovery
    const events = users.filter(() => next() < 0.15).map((user) => ({ user, type: next() < 0.6 ? 'open' : 'buy' }));
    await send(h, events);
    moments.push(await record(h, instanceId));
  }
  return { instanceId, moments };
}

describe('asOf: who was at each step at a past moment', () => {
  for (const [label, checkpointEveryMoves] of [
    ['a checkpoint after every batch', 1],
    ['no checkpoint after the start', 1_000_000_000],
  ] as const) {
    for (const seed of [1, 2]) {
      it(`answers exactly what the engine held at each recorded moment (${label}, seed ${seed})`, async () => {
        h = await startHarness(3, undefined, { checkpointEveryMoves, checkpointEveryMs: checkpointEveryMoves === 1 ? 0 : 3_600_000 });
        const { instanceId, moments } = await seededRun(h, seed, 10);
        const tenant = await tenantOf(h);
        const now = h.clock.now();
        // The run moved users in every way it can (else the comparison proves little).
        expect(Object.keys(moments.at(-1)!.edges).length).toBeGreaterThanOrEqual(6);
        for (const moment of moments) {
          const counts = await countsAsOf(database(), tenant, instanceId, moment.at, now);
          expect(counts.asOf).toBe(at(moment.at));
          expect(counts.steps, `counts at ${at(moment.at)}`).toEqual(Object.fromEntries(STEPS.map((s) => [s, moment.steps[s].length])));
          expect(counts.edges, `edges at ${at(moment.at)}`).toEqual(moment.edges);
          expect([counts.entered, counts.converted]).toEqual([moment.entered, undefined]);
          for (const step of STEPS) {
            const users = (await stepUsersAsOf(database(), tenant, instanceId, step, moment.at, now)).toArray();
            expect(users, `${step} at ${at(moment.at)}`).toEqual(moment.steps[step]);
          }
        }
      });
    }
  }

  it('refuses a moment before the start or after now, and one before a crowd update whose change was not recorded, naming the range', async () => {
    h = await startHarness(2, undefined, { checkpointEveryMoves: 1, checkpointEveryMs: 0 });
    const { instanceId, moments } = await seededRun(h, 3, 3);
    const tenant = await tenantOf(h);
    const started = moments[0].at;
    let now = h.clock.now();
    const early = await refusal(countsAsOf(database(), tenant, instanceId, started - 1, now));
    expect([early.status, early.code, early.details]).toEqual([422, 'outside_retention', { path: 'asOf', retainedFrom: at(started), retainedTo: at(now) }]);
    expect(early.message).toContain('the instance started at');
    const future = await refusal(stepUsersAsOf(database(), tenant, instanceId, 'wait', now + 1, now));
    expect(future.code).toBe('outside_retention');
    const unknown = await refusal(stepUsersAsOf(database(), tenant, instanceId, 'nowhere', now, now));
    expect([unknown.status, unknown.message]).toEqual([404, `Step "nowhere" of instance ${instanceId} was not found`]);

    // A crowd update adds and removes users without journal rows; one made before their changes were recorded (no
    // CrowdChange rows) cannot be crossed: the moments before it cannot be rebuilt any more.
    await advance(h, MINUTE);
    const updated = h.clock.now();
    await crowd(h, 'more', range(60, 200));
    await settle(h, h.engine.updateInstanceCrowd(h.tenantId, instanceId, { crowd: 'more' }));
    await db().crowdChange.deleteMany({ where: { instanceId } });
    const afterUpdate = await record(h, instanceId);
    await advance(h, MINUTE);
    now = h.clock.now();
    const before = await refusal(countsAsOf(database(), tenant, instanceId, moments.at(-1)!.at, now));
    expect([before.code, before.details]).toEqual(['outside_retention', { path: 'asOf', retainedFrom: at(updated), retainedTo: at(now) }]);
    expect(before.message).toContain('a crowd update');
    for (const step of STEPS) expect((await stepUsersAsOf(database(), tenant, instanceId, step, updated, now)).toArray()).toEqual(afterUpdate.steps[step]);

    // Moves after it replay onto the update's checkpoints (or onto later ones).
    await send(h, [{ user: 150, type: 'buy' }]);
    const moved = await record(h, instanceId);
    await advance(h, MINUTE);
    now = h.clock.now();
    for (const step of STEPS) expect((await stepUsersAsOf(database(), tenant, instanceId, step, moved.at, now)).toArray()).toEqual(moved.steps[step]);
    expect(moved.steps.bought).toContain(150);
  });

  for (const [label, checkpointEveryMoves] of [
    ['a checkpoint after every batch', 1],
    ["no checkpoint but the updates'", 1_000_000_000],
  ] as const) {
    it(`answers moments before, between and after crowd updates that add and remove users exactly (${label})`, async () => {
      h = await startHarness(3, undefined, { checkpointEveryMoves, checkpointEveryMs: checkpointEveryMoves === 1 ? 0 : 3_600_000 });
      const { instanceId, moments } = await seededRun(h, 6, 4);
      const next = seededRandom(60);
      // Users 1-59 leave and 121-200 join; then 1-30 come back and 181-200 leave; events move the joiners meanwhile.
      for (const [name, users] of [
        ['more', range(60, 200)],
        ['back', [...range(1, 30), ...range(60, 180)]],
      ] as const) {
        await advance(h, (1 + Math.floor(next() * 30)) * MINUTE);
        await crowd(h, name, users);
        await settle(h, h.engine.updateInstanceCrowd(h.tenantId, instanceId, { crowd: name }));
        moments.push(await record(h, instanceId));
        for (let round = 0; round < 3; round++) {
          await advance(h, (1 + Math.floor(next() * 45)) * MINUTE);
          await send(
            h,
            users.filter(() => next() < 0.2).map((user) => ({ user, type: next() < 0.6 ? 'open' : 'buy' })),
          );
          moments.push(await record(h, instanceId));
        }
      }
      const tenant = await tenantOf(h);
      const now = h.clock.now();
      for (const moment of moments) {
        const counts = await countsAsOf(database(), tenant, instanceId, moment.at, now);
        expect(counts.steps, `counts at ${at(moment.at)}`).toEqual(Object.fromEntries(STEPS.map((s) => [s, moment.steps[s].length])));
        expect([counts.edges, counts.entered], `edges and entries at ${at(moment.at)}`).toEqual([moment.edges, moment.entered]);
        for (const step of STEPS) {
          expect((await stepUsersAsOf(database(), tenant, instanceId, step, moment.at, now)).toArray(), `${step} at ${at(moment.at)}`).toEqual(
            moment.steps[step],
          );
        }
      }
    });
  }

  it('answers every moment retention kept the moves since (the checkpoints turned back), and refuses earlier ones naming the retained range', async () => {
    h = await startHarness(2, undefined, { checkpointEveryMoves: 1, checkpointEveryMs: 0 });
    const { instanceId, moments } = await seededRun(h, 4, 4);
    await advance(h, 60 * MINUTE);
    const recent: Moment[] = [];
    for (const user of [7, 8, 9]) {
      await send(h, [{ user, type: 'open' }]);
      recent.push(await record(h, instanceId));
      await advance(h, 10 * MINUTE);
    }
    const last = recent.at(-1)!;
    await updateTenantLimits(database(), h.tenantId, { journalRetentionHours: 1 });
    expect(await applyJournalRetention(database(), h.clock)).toBeGreaterThan(0);
    const tenant = await tenantOf(h);
    const now = h.clock.now();
    const refused = await refusal(countsAsOf(database(), tenant, instanceId, moments[1].at, now));
    expect(refused.code).toBe('outside_retention');
    expect(refused.message).toContain('deleted by retention (journalRetentionHours 1)');
    const { retainedFrom } = refused.details as { retainedFrom: string };
    expect(Date.parse(retainedFrom)).toBeLessThanOrEqual(last.at);
    // Every moment retention kept the moves since is answered, those before the checkpoints by turning them back.
    const answerable = [...moments, ...recent].filter((moment) => moment.at >= Date.parse(retainedFrom));
    expect(answerable.length).toBeGreaterThan(1);
    for (const moment of answerable) {
      expect((await countsAsOf(database(), tenant, instanceId, moment.at, now)).edges, `edges at ${at(moment.at)}`).toEqual(moment.edges);
      for (const step of STEPS) {
        expect((await stepUsersAsOf(database(), tenant, instanceId, step, moment.at, now)).toArray(), `${step} at ${at(moment.at)}`).toEqual(
          moment.steps[step],
        );
      }
    }
  });

  it('refuses a stopped instance (its users at stop are the snapshot)', async () => {
    h = await startHarness(2);
    const { instanceId } = await seededRun(h, 5, 1);
    await settle(h, h.engine.stopInstance(h.tenantId, instanceId));
    const refused = await refusal(countsAsOf(database(), await tenantOf(h), instanceId, h.clock.now(), h.clock.now()));
    expect([refused.status, refused.code, (refused.details as { path: string }).path]).toEqual([422, 'unprocessable', 'asOf']);
    expect(refused.message).toContain('is stopped');
  });
});
