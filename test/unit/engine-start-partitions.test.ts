import { afterEach, expect, it } from 'vitest';
import type { WorkflowDefinition } from '../../core/model/workflow';
import type { Database } from '../../server/storage/database';
import { db, database } from '../helpers/app-db';
import { withTransactionHook } from '../helpers/raw-hook';
import { crowd, range, startHarness, steps, workflow, type Harness } from '../fixtures/engine/harness';

// A start commits partition by partition (issue 34: one transaction over 2^27 users held SQLite, and the engine thread
// with it, for tens of seconds). These check what that must not cost: a start cut short after some partitions
// committed is invisible, and its retry journals every partition's entry once.

const PARTITIONS = 4;
const definition: WorkflowDefinition = {
  steps: [
    {
      name: 'entry',
      kind: 'branch',
      branches: [
        { condition: 'event.type == "buy"', next: 'done' },
        { condition: 'event.type == "quit"', next: 'done' },
      ],
    },
    { name: 'done', kind: 'direct' },
  ],
};

/** The real database, whose raw transactions writing a checkpoint fail once `failing` is set and `allowed` have passed. */
function crashingCheckpoints(real: Database) {
  const state = { failing: false, allowed: 0, committed: 0 };
  const database = withTransactionHook(real, async (statements, commit) => {
    if (!statements.some((s) => s.sql.includes('ShardCheckpoint'))) return commit();
    if (state.failing && state.committed >= state.allowed) throw new Error('simulated crash between partition commits');
    const result = await commit();
    state.committed++;
    return result;
  });
  return { database, state };
}

let h: Harness;
afterEach(async () => h?.close());

it('commits each partition apart; a start cut short is invisible, and its retry journals every partition once', async () => {
  const faulty = crashingCheckpoints(database());
  h = await startHarness(PARTITIONS, undefined, { database: faulty.database, startCommitBytes: 1 });
  const wf = await workflow(h, definition);
  await crowd(h, 'everyone', range(1, 1_000));

  faulty.state.failing = true;
  faulty.state.allowed = 2;
  const { procedureId, instanceId } = await h.engine.startInstance(h.tenantId, wf, { crowd: 'everyone' });
  const failed = await h.runner.await(procedureId, 60_000);
  expect(failed.state, JSON.stringify(failed)).toBe('failed');
  expect(failed.error).toContain('simulated crash');
  // Two partitions committed (one transaction each, startCommitBytes 1), the instance was not marked running.
  const afterCrash = await db().shardCheckpoint.findMany({ where: { instanceId }, select: { partition: true } });
  expect(afterCrash.map((c) => c.partition).sort()).toEqual([0, 1]);
  expect((await db().instance.findUniqueOrThrow({ where: { id: instanceId } })).state).toBe('failed');

  faulty.state.failing = false;
  faulty.state.committed = 0;
  await h.runner.retry(procedureId);
  const done = await h.runner.await(procedureId, 60_000);
  expect(done.state, JSON.stringify(done)).toBe('done');
  expect(faulty.state.committed, 'the retry commits only the partitions not committed before').toBe(PARTITIONS - 2);

  const entries = await db().journal.findMany({ where: { instanceId, fromStep: null }, select: { partition: true, count: true } });
  expect(entries.map((e) => e.partition).sort()).toEqual(range(0, PARTITIONS - 1));
  expect(entries.reduce((sum, e) => sum + Number(e.count), 0)).toBe(1_000);
  expect(await steps(h, instanceId)).toEqual({ entry: 1_000, done: 0 });
  expect(await h.engine.getInstance(h.tenantId, instanceId)).toMatchObject({ state: 'running', userCount: 1_000 });
});

it('a small start is one transaction', async () => {
  const faulty = crashingCheckpoints(database());
  h = await startHarness(PARTITIONS, undefined, { database: faulty.database });
  const wf = await workflow(h, definition);
  await crowd(h, 'few', range(1, 100));
  const { procedureId, instanceId } = await h.engine.startInstance(h.tenantId, wf, { crowd: 'few' });
  expect((await h.runner.await(procedureId, 60_000)).state).toBe('done');
  expect(faulty.state.committed).toBe(1);
  expect(await steps(h, instanceId)).toEqual({ entry: 100, done: 0 });
});
