import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../server/clock';
import { createProcedureRunner } from '../../server/procedures/runner';
import { createScheduler, scheduledProcedureId } from '../../server/procedures/scheduler';
import { db, database } from '../helpers/app-db';
import { createTenant } from '../../server/tenants/tenants';
import { createWorkflow, updateWorkflow } from '../../server/workflows/workflows';
import { faultyDatabase } from '../fixtures/faulty-database';
import { registerStandInScheduledStart } from '../fixtures/procedures/scheduled-start';

// The scheduler keeps the schedules it read and sleeps until the next firing: between firings it touches no row, and a
// save of a schedule wakes it to read them again. Its operations are counted through a fault-free faulty database
// (test/fixtures/faulty-database.ts: a Prisma query hook on the real database).

const start = Date.UTC(2026, 0, 1, 0, 0, 0, 500);
const clock = new ManualClock(start);
const runner = createProcedureRunner(database(), { clock, owner: 'scheduler-idle-test' });
beforeAll(() => registerStandInScheduledStart(runner.types));
const counted = faultyDatabase(database(), { provider: process.env.CROWDFLOW_TEST_PROVIDER === 'postgres' ? 'postgres' : 'sqlite', rate: 0, seed: 1 });
// No safety re-read within the test's few minutes: every read counted here is a firing's or a notice's.
const scheduler = createScheduler({ database: counted.database, runner, clock, rereadMs: 3_600_000 });
afterAll(async () => {
  await scheduler.stop();
  await runner.stop();
});

const definition = {
  steps: [
    { name: 'entry', kind: 'direct', next: 'done' },
    { name: 'done', kind: 'direct' },
  ],
};

/** Moves the clock a second at a time (each second a per-second poll would have read), letting the loop settle. */
async function secondBySecond(seconds: number): Promise<void> {
  for (let i = 0; i < seconds; i++) {
    await clock.advance(1_000);
    await scheduler.settled();
  }
}

describe('the scheduler between firings', () => {
  it('reads nothing until the next firing, and a save of the schedule wakes it to read them again', async () => {
    const view = await createTenant(database(), { name: 'scheduler-idle', partitions: 1 });
    const tenant = { ...view, createdAt: new Date(view.createdAt) };
    const schedule = { cron: '0 * * * * *', crowd: 'vip' };
    const workflow = await createWorkflow(database(), tenant, { name: 'minutely', definition, schedule }, clock.now());
    await runner.start();
    scheduler.start();
    await scheduler.settled();

    const afterFirstLook = counted.operations;
    await secondBySecond(59); // 00:00:59.500
    expect(counted.operations).toBe(afterFirstLook);

    await clock.advance(500); // 00:01:00: the firing
    await scheduler.settled();
    const firstFiring = scheduledProcedureId(workflow.id, start - 500 + 60_000);
    expect((await runner.await(firstFiring)).state).toBe('done');
    const afterFiring = counted.operations;
    expect(afterFiring).toBeGreaterThan(afterFirstLook);

    await secondBySecond(30); // 00:01:30
    expect(counted.operations).toBe(afterFiring);

    // A save of the schedule: one read of the schedules, at once, then the new cron fires from the copy.
    await updateWorkflow(database(), tenant, workflow.id, { schedule: { cron: '*/10 * * * * *', crowd: 'vip' } }, clock.now());
    await scheduler.settled();
    expect(counted.operations).toBe(afterFiring + 1);
    await secondBySecond(9);
    expect(counted.operations).toBe(afterFiring + 1);
    await secondBySecond(1); // 00:01:40: recorded as skipped (the 00:01:00 instance still runs)
    const tenSecondFiring = scheduledProcedureId(workflow.id, start - 500 + 100_000);
    expect(await runner.await(tenSecondFiring)).toMatchObject({ state: 'done', output: { skipped: 'already running' } });

    // The schedule removed: read once, and nothing fires any more.
    await updateWorkflow(database(), tenant, workflow.id, { schedule: null }, clock.now());
    await scheduler.settled();
    const afterRemoval = counted.operations;
    await secondBySecond(45);
    expect(counted.operations).toBe(afterRemoval);
    expect(await db().procedure.count({ where: { workflowId: workflow.id } })).toBe(2);
  });

  it('a schedule changed where no notice came from (another member, its channel down) never fires from the old copy', async () => {
    const view = await createTenant(database(), { name: 'scheduler-unnoticed', partitions: 1 });
    const tenant = { ...view, createdAt: new Date(view.createdAt) };
    const workflow = await createWorkflow(database(), tenant, { name: 'at-15', definition, schedule: { cron: '15 * * * * *', crowd: 'vip' } }, clock.now());
    await scheduler.settled();
    const savedMs = clock.now();
    await db().workflow.update({
      where: { id: workflow.id },
      data: { schedule: JSON.stringify({ cron: '45 * * * * *', crowd: 'vip' }), updatedAt: new Date(savedMs) },
    });

    // The old copy's next firing comes; the row read again says :45, whose latest firing since the save fires instead.
    const oldFiringMs = Math.floor((savedMs - 15_000) / 60_000) * 60_000 + 75_000;
    await clock.set(oldFiringMs);
    await scheduler.settled();
    const newFiringMs = Math.floor((oldFiringMs - 45_000) / 60_000) * 60_000 + 45_000;
    expect(newFiringMs).toBeGreaterThan(savedMs);
    const procedures = await db().procedure.findMany({ where: { workflowId: workflow.id }, select: { id: true } });
    expect(procedures.map((p) => p.id)).toEqual([scheduledProcedureId(workflow.id, newFiringMs)]);
  });
});
