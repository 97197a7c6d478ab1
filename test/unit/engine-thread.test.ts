// The engine on a worker thread of its own (server/engine/thread.ts) behind its client (server/engine/client.ts):
// the same instance semantics as in-process, counts answered from what the engine publishes, and the thread that
// answers requests never blocked by engine work. Real database, real worker thread, real procedure runner.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { app } from '../../server/app';
import { RoaringBitmap32 } from '../../server/crowd/bitmap';
import { saveCrowd } from '../../server/crowd/store';
import type { EngineClient } from '../../server/engine/client';
import { appendEvents } from '../../server/engine/ingest';
import { AppError } from '../../server/errors';
import { newId } from '../../server/ids';
import type { ProcedureRunner } from '../../server/procedures/types';
import { db, database } from '../helpers/app-db';
import { range } from '../fixtures/engine/harness';
import { startThreadEngine, type ThreadEngine } from '../fixtures/engine/thread-engine';
import { loopTurns } from '../helpers/loop-turns';
import { waitFor } from '../helpers/wait-for';

/**
 * A start over 5M users held the request thread for 2.5 s when the engine shared it; this many take the engine thread
 * ~0.7-1.2 s. How long the request thread waits now is the bench's ("API latency under engine load"), not a test's.
 */
const BIG_CROWD = 20_000_000;
const PARTITIONS = 4;

const journey = {
  steps: [
    {
      name: 'wait',
      kind: 'branch',
      branches: [
        { condition: 'event.type == "purchase"', next: 'bought' },
        { condition: 'false', next: 'bought' },
      ],
    },
    { name: 'bought', kind: 'direct' },
  ],
};

let runner: ProcedureRunner;
let engine: EngineClient;
let threaded: ThreadEngine;
let tenantId: string;

beforeAll(async () => {
  tenantId = newId('tn');
  // user % P (userBlock 1), the layout of tenants made before id blocks: a partition's share of the big crowd is every
  // P-th id, whose start takes long enough that the request thread's turns during it can be counted.
  await db().tenant.create({ data: { id: tenantId, name: tenantId.toLowerCase().replace(/[^a-z0-9]/g, ''), partitions: PARTITIONS, userBlock: 1 } });
  threaded = await startThreadEngine();
  ({ engine, runner } = threaded);
});

afterAll(() => threaded.stop());

async function workflow(definition: object): Promise<string> {
  const id = newId('wf');
  await db().workflow.create({ data: { id, tenantId, name: id, currentVersion: 1, draft: '{}' } });
  await db().workflowVersion.create({ data: { tenantId, workflowId: id, version: 1, definition: JSON.stringify(definition) } });
  return id;
}

async function settled(submitted: Promise<{ procedureId: string; instanceId: string }>): Promise<string> {
  const { procedureId, instanceId } = await submitted;
  const done = await runner.await(procedureId, 120_000);
  if (done.state !== 'done') throw new Error(`procedure ${done.type} ended ${done.state}: ${done.error}`);
  return instanceId;
}

const onPostgres = process.env.CROWDFLOW_TEST_PROVIDER === 'postgres';

/**
 * Locks the rows of the instance's published figures (ShardCounts) until `release`: the engine's publications of it
 * wait, so the figures stay those it published last.
 */
function holdFigures(instanceId: string) {
  let release!: () => void;
  let locked!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const lockedNow = new Promise<void>((resolve) => (locked = resolve));
  const done = db().$transaction(
    async (tx) => {
      const table = database().dialect.table('ShardCounts');
      await tx.$queryRawUnsafe(`SELECT 1 FROM ${table} WHERE "tenantId" = $1 AND "instanceId" = $2 FOR UPDATE`, tenantId, instanceId);
      locked();
      await gate;
    },
    { timeout: 60_000 },
  );
  return { locked: Promise.race([lockedNow, done]), release, done };
}

/** Asks the published counts again (the engine applies on its own thread; there is no in-process drain to call). */
const countsUntil = (instanceId: string, done: (steps: Record<string, number>) => boolean) =>
  waitFor('the counts', async () => (await engine.getCounts(tenantId, instanceId)).steps, done, { everyMs: 10 });

describe('the engine thread', () => {
  it('starts, applies events, answers counts, where-is-user and exports, and stops into a snapshot', async () => {
    await saveCrowd(database(), tenantId, 'ten', RoaringBitmap32.from([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]), 'replace');
    const instanceId = await settled(engine.startInstance(tenantId, await workflow(journey), { crowd: 'ten' }));
    // Published before the start procedure's reply: read at once, no waiting.
    expect((await engine.getCounts(tenantId, instanceId)).steps).toEqual({ wait: 10, bought: 0 });

    const now = Date.now();
    await appendEvents(
      database(),
      app().state,
      tenantId,
      [3, 7].map((user) => ({ user, type: 'purchase', data: {}, time: now })),
    );
    engine.wakeTenant(tenantId);
    expect(await countsUntil(instanceId, (s) => s.bought === 2)).toEqual({ wait: 8, bought: 2 });

    const where = await engine.whereIsUser(tenantId, 7);
    expect(where.instances).toEqual([{ instanceId, workflowId: expect.any(String), step: 'bought' }]);
    expect((await engine.stepBitmap(tenantId, instanceId, 'bought')).toArray()).toEqual([3, 7]);
    const missing = await engine.stepBitmap(tenantId, instanceId, 'nowhere').catch((error: unknown) => error);
    expect(missing).toBeInstanceOf(AppError);
    expect((missing as AppError).code).toBe('not_found');

    await settled(engine.stopInstance(tenantId, instanceId));
    expect((await engine.getCounts(tenantId, instanceId)).steps).toEqual({ wait: 8, bought: 2 });
    expect((await engine.getInstance(tenantId, instanceId)).state).toBe('stopped');
  });

  // On PostgreSQL the request thread also keeps the figures the cluster's members publish (server/cluster/counts.ts),
  // PUBLISH_EVERY_MS after a change, so they lag the engine's own counts; a stop drops them only with its engine's next
  // publication. Those of this instance are held back here (their rows locked, as a busy database or a stop coming
  // within that interval of the last change would): read at once after the stop, its counts are still the snapshot's.
  it.runIf(onPostgres)('answers a stopped instance with its snapshot, not with the figures the cluster published before', async () => {
    await saveCrowd(database(), tenantId, 'first', RoaringBitmap32.from(range(1, 10)), 'replace');
    await saveCrowd(database(), tenantId, 'more', RoaringBitmap32.from(range(1, 15)), 'replace');
    const instanceId = await settled(engine.startInstance(tenantId, await workflow(journey), { crowd: 'first' }));
    const published = () => db().shardCounts.count({ where: { tenantId, instanceId } });
    await waitFor('the figures of every partition', published, (rows) => rows === PARTITIONS);
    const held = holdFigures(instanceId);
    try {
      await held.locked;
      await settled(engine.updateInstanceCrowd(tenantId, instanceId, { crowd: 'more' }));
      expect((await engine.getCounts(tenantId, instanceId)).steps).toEqual({ wait: 15, bought: 0 });
      await settled(engine.stopInstance(tenantId, instanceId));
      expect((await engine.getCounts(tenantId, instanceId)).steps).toEqual({ wait: 15, bought: 0 });
    } finally {
      held.release();
      await held.done;
    }
  });

  it(`keeps the request thread turning while it starts a ${BIG_CROWD.toLocaleString('en-US')}-user instance`, async () => {
    const everyone = new RoaringBitmap32();
    everyone.addRange(0, BIG_CROWD);
    await saveCrowd(database(), tenantId, 'big', everyone, 'replace');
    const workflowId = await workflow(journey);
    // The moments the request thread's event loop turns while the start runs. A start on this thread would be one
    // block from its first turn to its last; a pause of this process (a major GC of a test worker that ran many files)
    // can be long too, so the start is long enough that such a pause cannot take half of it.
    const began = performance.now();
    const turns = loopTurns();
    const instanceId = await settled(engine.startInstance(tenantId, workflowId, { crowd: 'big' }));
    turns.stop();
    const moments = [began, ...turns.stamps, performance.now()];
    expect((await engine.getCounts(tenantId, instanceId)).total).toBe(BIG_CROWD);
    // A reduce, not Math.max(...gaps): a fast start gives hundreds of thousands of turns, past the arguments a call takes.
    const longest = moments.slice(1).reduce((most, at, i) => Math.max(most, at - moments[i]), 0);
    const window = moments[moments.length - 1] - moments[0];
    expect(longest, `the request thread was held ${longest.toFixed(0)} ms of the start's ${window.toFixed(0)} ms`).toBeLessThan(window / 2);
    await settled(engine.stopInstance(tenantId, instanceId));
  });
});
