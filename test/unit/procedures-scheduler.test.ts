import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../server/clock';
import { createProcedureRunner } from '../../server/procedures/runner';
import { createScheduler, scheduledProcedureId, SCHEDULED_START_TYPE } from '../../server/procedures/scheduler';
import type { Json } from '../../server/procedures/types';
import { db, database } from '../helpers/app-db';
import { registerStandInScheduledStart } from '../fixtures/procedures/scheduled-start';
import { tenantRow } from '../helpers/tenant-row';

// A stand-in for the engine's instance.start: creates a running instance under an id derived from the procedure id.
let starts = 0;
beforeAll(() =>
  registerStandInScheduledStart(runner.types, () => {
    starts += 1;
  }),
);

const clock = new ManualClock(Date.UTC(2026, 0, 1, 0, 0, 0, 500));
const runner = createProcedureRunner(database(), { clock, owner: 'scheduler-test' });
afterAll(() => runner.stop());

async function workflow(id: string, schedule: Json | string, savedAt?: number) {
  const text = typeof schedule === 'string' ? schedule : JSON.stringify(schedule);
  const updatedAt = savedAt === undefined ? undefined : new Date(savedAt);
  await tenantRow('tenant-s');
  await db().workflow.create({ data: { id, tenantId: 'tenant-s', name: id, currentVersion: 1, draft: '{}', schedule: text, updatedAt } });
}

describe('scheduled starts', () => {
  it('two processes seeing the same firing start one instance; a firing while it runs is skipped and recorded', async () => {
    await workflow('wf-every-10s', { cron: '*/10 * * * * *', crowd: 'vip', enabled: true });
    await runner.start();
    // Two schedulers stand for two server processes on one database.
    const [a, b] = [createScheduler({ database: database(), runner, clock }), createScheduler({ database: database(), runner, clock })];
    expect(await a.tick()).toEqual([]);
    expect(await b.tick()).toEqual([]);

    await clock.advance(9_700); // 00:00:10.200
    const firingMs = Date.UTC(2026, 0, 1, 0, 0, 10);
    const id = scheduledProcedureId('wf-every-10s', firingMs);
    const [firedA, firedB] = await Promise.all([a.tick(), b.tick()]);
    expect([...firedA, ...firedB].map((f) => f.procedureId)).toEqual([id, id]);
    const started = await runner.await(id);
    expect(started.state).toBe('done');
    expect(started.data).toMatchObject({ tenantId: 'tenant-s', workflowId: 'wf-every-10s', crowd: 'vip' });
    expect(started.workflowId).toBe('wf-every-10s');
    expect(await db().procedure.count({ where: { workflowId: 'wf-every-10s' } })).toBe(1);
    expect(await db().instance.count({ where: { workflowId: 'wf-every-10s' } })).toBe(1);
    expect(starts).toBe(1);

    // A scheduler ticking the same window again (a slow or restarted process) records nothing new.
    await clock.advance(10_000); // 00:00:20.200: the instance from 00:00:10 still runs
    const [skipped] = await a.tick();
    expect(skipped).toMatchObject({ outcome: 'skipped', procedureId: scheduledProcedureId('wf-every-10s', firingMs + 10_000) });
    const record = (await runner.get(skipped!.procedureId))!;
    expect(record).toMatchObject({ state: 'done', type: SCHEDULED_START_TYPE, output: { skipped: 'already running', instanceId: `in-${id}` } });
    const [again] = await b.tick();
    expect(again).toMatchObject({ outcome: 'already-recorded', procedureId: skipped!.procedureId });
    expect(starts).toBe(1);
    expect(await db().instance.count({ where: { workflowId: 'wf-every-10s' } })).toBe(1);
  });

  it('ignores disabled and invalid schedules, and fires only the latest firing missed since the last tick', async () => {
    await db().workflow.deleteMany({});
    await workflow('wf-disabled', { cron: '* * * * * *', crowd: 'vip', enabled: false });
    await workflow('wf-invalid', '{"cron":"* * * * *","crowd":"vip"}');
    await workflow('wf-minutely', { cron: '0 * * * * *', crowd: 'all', enabled: true });
    const scheduler = createScheduler({ database: database(), runner, clock });
    await scheduler.tick();
    await clock.advance(5 * 60_000);
    const fired = await scheduler.tick();
    const latest = Math.floor(clock.now() / 60_000) * 60_000;
    expect(fired.map((f) => [f.workflowId, f.firingMs, f.outcome])).toEqual([['wf-minutely', latest, 'submitted']]);
    expect((await runner.await(fired[0]!.procedureId)).state).toBe('done');
  });

  it('firings missed while no server ran follow the catch-up policy: skip records them missed, latest runs the latest within its deadline', async () => {
    await db().workflow.deleteMany({});
    await clock.advance(60_000 - (clock.now() % 60_000)); // saved on the minute
    const savedAt = clock.now();
    await workflow('wf-skip', { cron: '0 * * * * *', crowd: 'vip', catchUp: 'skip' }, savedAt);
    await workflow('wf-latest', { cron: '0 * * * * *', crowd: 'vip', catchUp: 'latest', startingDeadlineSeconds: 600 }, savedAt);
    await workflow('wf-late', { cron: '0 * * * * *', crowd: 'vip', catchUp: 'latest', startingDeadlineSeconds: 10 }, savedAt);
    expect(await createScheduler({ database: database(), runner, clock }).tick()).toEqual([]); // a process starts: nothing missed yet

    // That process dies; five firings fall while no server runs; a new process starts 30 s after the latest.
    await clock.advance(5 * 60_000 + 30_000);
    const latestMs = Math.floor(clock.now() / 60_000) * 60_000;
    const restarted = createScheduler({ database: database(), runner, clock });
    const fired = await restarted.tick();
    expect(fired.map((f) => [f.workflowId, f.outcome, f.firingMs])).toEqual([
      ['wf-skip', 'missed', latestMs],
      ['wf-latest', 'submitted', latestMs],
      ['wf-late', 'missed', latestMs],
    ]);
    const [skip, latest, late] = await Promise.all(fired.map((f) => runner.await(f.procedureId)));
    expect(skip).toMatchObject({
      state: 'done',
      output: {
        skipped: 'missed',
        missedCount: 5,
        reason: 'no server was running (catch-up policy: skip)',
        firstMissedAt: new Date(latestMs - 4 * 60_000).toISOString(),
      },
    });
    expect(latest).toMatchObject({
      state: 'done',
      data: { scheduledAt: new Date(latestMs).toISOString(), missedBefore: 4 },
      output: { instanceId: `in-${latest.id}` },
    });
    expect(late).toMatchObject({
      state: 'done',
      output: { skipped: 'missed', missedCount: 5, reason: 'no server was running, and it is 30 s late, past the starting deadline of 10 s' },
    });

    // Another process starting now finds every missed firing recorded: nothing twice.
    expect(await createScheduler({ database: database(), runner, clock }).tick()).toEqual([]);
  });
});
