import { spawn } from 'node:child_process';
import { afterAll, expect, it } from 'vitest';
import { app } from '../../server/app';
import { RoaringBitmap32 } from '../../server/crowd/bitmap';
import { saveCrowd } from '../../server/crowd/store';
import { Engine } from '../../server/engine/engine';
import { appendEvents } from '../../server/engine/ingest';
import { decodeEvents } from '../../server/engine/log-codec';
import { newId } from '../../server/ids';
import { db, database } from '../helpers/app-db';
import { crashBatches, CRASH_SEED, CRASH_USERS, crashWorkflow, seeded } from '../fixtures/engine/crash-events';
import { range, startHarness, type Harness } from '../fixtures/engine/harness';

// A real server process ingests and applies events and is SIGKILLed at random moments (fixed seed); after the last
// restart every acknowledged event must have been applied exactly once: the same per-step counts, edges and journal
// as an uninterrupted run of the same events in this process.
const PARTITIONS = 3;
/** Kills in `npm test` (one mid-stream, one in start-up and recovery, one mid-stream); `npm run soak` runs 20 (CRASH_KILLS). */
const KILLS = Number(process.env.CRASH_KILLS ?? 3);

let h: Harness;
afterAll(async () => {
  await h?.close();
});

async function tenantWithInstance(): Promise<{ tenantId: string; instanceId: string }> {
  const tenantId = newId('tn');
  await db().tenant.create({ data: { id: tenantId, name: tenantId.toLowerCase().replace(/[^a-z0-9]/g, ''), partitions: PARTITIONS } });
  await saveCrowd(database(), tenantId, 'crowd', RoaringBitmap32.from(range(1, CRASH_USERS)), 'replace');
  const workflowId = newId('wf');
  await db().workflow.create({ data: { id: workflowId, tenantId, name: 'crash', currentVersion: 1, draft: '{}' } });
  await db().workflowVersion.create({ data: { tenantId, workflowId, version: 1, definition: JSON.stringify(crashWorkflow) } });
  const { procedureId, instanceId } = await h.engine.startInstance(tenantId, workflowId, { crowd: 'crowd' });
  expect((await h.runner.await(procedureId, 30_000)).state).toBe('done');
  return { tenantId, instanceId };
}

type ChildRun = { acks: number[]; done: boolean; killed: boolean; stderr: string };
/** When to SIGKILL: `afterSpawnMs` (start-up, recovery) or a little after the child acknowledged `afterAcks` batches. */
type KillPlan = { afterSpawnMs: number } | { afterAcks: number; delayMs: number } | null;

function runChild(tenantId: string, plan: KillPlan): Promise<ChildRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/fixtures/engine/crash-child.ts'], {
      env: { ...process.env, CRASH_TENANT: tenantId, CRASH_PARTITIONS: String(PARTITIONS) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const run: ChildRun = { acks: [], done: false, killed: false, stderr: '' };
    let timer: ReturnType<typeof setTimeout> | undefined;
    const killIn = (ms: number) => (timer ??= setTimeout(() => (run.killed = child.kill('SIGKILL')), ms));
    if (plan && 'afterSpawnMs' in plan) killIn(plan.afterSpawnMs);
    let buffered = '';
    child.stdout.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      const lines = buffered.split('\n');
      buffered = lines.pop()!;
      for (const line of lines) {
        if (line.startsWith('ACK ')) run.acks.push(Number(line.slice(4)));
        if (line === 'DONE') run.done = true;
      }
      if (plan && 'afterAcks' in plan && run.acks.length >= plan.afterAcks) killIn(plan.delayMs);
    });
    child.stderr.on('data', (chunk: Buffer) => (run.stderr += chunk.toString()));
    child.on('error', reject);
    child.on('exit', () => {
      clearTimeout(timer);
      resolve(run);
    });
  });
}

async function journalOf(instanceId: string) {
  const rows = await db().journal.findMany({ where: { instanceId }, orderBy: { seq: 'asc' } });
  const byPartition = new Map<number, string[]>();
  for (const r of rows) {
    const users = r.bitmap ? RoaringBitmap32.deserialize(r.bitmap, 'portable').toArray().join(' ') : String(r.user);
    const list = byPartition.get(r.partition) ?? [];
    list.push(`${r.fromStep}->${r.toStep} [${users}] x${r.count} ${r.leaveAction}/${r.enterAction}`);
    byPartition.set(r.partition, list);
  }
  return [...byPartition.entries()].sort(([a], [b]) => a - b);
}

it(`every acknowledged event is applied exactly once across ${KILLS} SIGKILLs of a real server process`, { timeout: 300_000 }, async () => {
  h = await startHarness(1);
  const crashed = await tenantWithInstance();
  const reference = await tenantWithInstance();
  await h.engine.stop(); // hands the leases back: the child processes own the partitions from here on

  const random = seeded(CRASH_SEED);
  const acknowledged = new Set<number>();
  let kills = 0;
  while (kills < KILLS) {
    // Most kills land mid-stream (batches being ingested, applied, checkpointed); every fourth during start-up and
    // recovery, the second one first, so the few kills of `npm test` have one too (recovering from the first kill).
    const plan: KillPlan = kills % 4 === 1 ? { afterSpawnMs: 300 + random() * 1_500 } : { afterAcks: 1 + Math.floor(random() * 15), delayMs: random() * 40 };
    const run = await runChild(crashed.tenantId, plan);
    run.acks.forEach((i) => acknowledged.add(i));
    if (process.env.CRASH_DEBUG) console.log(`run: killed=${run.killed} done=${run.done} acks=${run.acks.length}`);
    if (run.killed && !run.done) kills++;
    else if (!run.done) throw new Error(`child exited without DONE:\n${run.stderr}`);
  }
  const last = await runChild(crashed.tenantId, null);
  expect(last.done, last.stderr).toBe(true);
  last.acks.forEach((i) => acknowledged.add(i));

  // Every batch is in the log exactly once (a batch appended but killed before its ACK is durable, just not
  // acknowledged), and so is every acknowledged one.
  const batches = crashBatches();
  const logged = new Map<number, number>();
  for (const row of await db().eventLog.findMany({ where: { tenantId: crashed.tenantId } })) {
    for (const event of decodeEvents(row.events)) logged.set(Number(event.data.batch), (logged.get(Number(event.data.batch)) ?? 0) + 1);
  }
  expect([...logged.keys()].sort((a, b) => a - b)).toEqual(range(0, batches.length - 1));
  expect(new Set(logged.values())).toEqual(new Set([batches[0].length]));
  for (const batch of acknowledged) expect(logged.has(batch)).toBe(true);
  // A kill can land between a batch's commit and its ACK line, so each kill leaves at most one batch unacknowledged.
  expect(acknowledged.size).toBeGreaterThanOrEqual(batches.length - KILLS);

  // The uninterrupted run: the same batches through an engine in this process.
  h.engine = new Engine({ database: h.app.database, ingestState: h.app.state, clock: h.clock, runner: h.runner, owner: `test-${h.tenantId}` });
  await h.engine.start();
  await h.engine.loaded();
  for (const batch of batches) await appendEvents(database(), app().state, reference.tenantId, batch);
  h.engine.wakeTenant(reference.tenantId);
  await h.engine.drain(reference.tenantId, 120_000);
  await h.engine.drain(crashed.tenantId, 120_000);

  const expected = await h.engine.getCounts(reference.tenantId, reference.instanceId);
  const actual = await h.engine.getCounts(crashed.tenantId, crashed.instanceId);
  expect({ ...actual, instanceId: null }).toEqual({ ...expected, instanceId: null });
  expect(expected.total).toBe(CRASH_USERS);
  expect(Object.values(expected.edges).reduce((a, b) => a + b, 0)).toBeGreaterThan(1_000);
  expect(await journalOf(crashed.instanceId)).toEqual(await journalOf(reference.instanceId));
});
