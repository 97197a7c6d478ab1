// Engine only, no HTTP: this process starts the engine and the procedure runner like a server does, starts the
// branch journey over a dense crowd, appends event batches straight to the input log (appendEvents, what the
// events route calls) and waits until the engine's counts show every expected move. Also the memory a running
// instance adds to the process, measured after garbage collection.
import { app } from '../../server/app';
import { saveCrowd } from '../../server/crowd';
import type { Engine } from '../../server/engine/engine';
import { appendEvents, parseEventBatch } from '../../server/engine/ingest';
import type { LoggedEvent } from '../../server/engine/types';
import { WorkflowDefinition } from '../../core/model/workflow';
import { createTenant } from '../../server/tenants/tenants';
import { createWorkflow } from '../../server/workflows/workflows';
import { BRANCH_JOURNEY, denseBitmap, expectedMoves, journeyEvents } from '../lib/data';
import type { ScratchDatabase } from '../lib/database';
import { formatNumber, median, percentile, progress } from '../lib/report';
import { profiled } from '../lib/windows';
import type { Measured } from './journey';
import { closeApp, useDatabase } from './rows';
import { measureExitStart } from './engine-exit';
import { measureHoldoutStart } from './engine-holdout';
import { importPlans, measureRoutedStart } from './engine-routed';
import { database as processDatabase } from '../../test/helpers/app-db';

const APPEND_BATCH = 10_000;
const RESERVED_USERS = 1_000;

export interface EngineFigures {
  start: Measured;
  /** A start whose entry is a 3-way profile branch, as a multiple of a plain start timed beside it (engine-routed.ts). */
  routedStart: Measured;
  /** A start holding out 10% of the users, as a multiple of a plain start timed beside it (engine-holdout.ts). */
  holdoutStart: Measured;
  /** A start whose exit criteria over profiles take out ~30% of the users, as a multiple of a plain start timed beside it (engine-exit.ts). */
  exitStart: Measured;
  counts: Measured;
  apply: Measured;
  memory: Measured;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function settledRss(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  gc?.();
  return process.memoryUsage().rss;
}

/** Bytes of every step bitmap of every shard the engine holds for the instance (portable size ≈ heap size). */
function shardBytes(engine: Engine, instanceId: string): number {
  const runtime = engine.findRuntime(instanceId);
  if (!runtime) throw new Error(`the engine holds no runtime for ${instanceId}`);
  let bytes = 0;
  for (const shard of runtime.shards) for (const bitmap of shard?.steps.values() ?? []) bytes += bitmap.getSerializationSizeInBytes('portable');
  return bytes;
}

export async function measureEngine(
  database: ScratchDatabase,
  scale: { users: number; events: number; partitions: number },
  profile: boolean,
): Promise<EngineFigures> {
  // What server/boot.ts builds and starts (the scratch database is migrated already); closed again below, so the next
  // provider's run builds its own app on its own database.
  const built = await useDatabase(database.url, { engine: 'in-process' });
  await built.start();
  const engine = built.engine as Engine;
  try {
    const view = await createTenant(processDatabase(), { name: 'bench', partitions: scale.partitions });
    const tenant = { ...view, createdAt: new Date(view.createdAt) };
    await saveCrowd(processDatabase(), tenant.id, 'all', denseBitmap(scale.users), 'replace');
    const workflow = await createWorkflow(processDatabase(), tenant, { name: 'branch', definition: WorkflowDefinition.parse(BRANCH_JOURNEY) });
    await sleep(500);
    const rssBefore = settledRss();
    const startedAt = performance.now();
    const instanceId = await profiled(profile, `engine only on ${database.provider}: start`, async () => {
      const { instanceId } = await engine.startInstance(tenant.id, workflow.id, { crowd: 'all' });
      for (let state = ''; state !== 'running'; await sleep(5)) {
        state = (await engine.getInstance(tenant.id, instanceId)).state;
        if (state === 'failed' || state === 'stopped') throw new Error(`instance ${instanceId} is ${state}`);
      }
      return instanceId;
    });
    const start: Measured = { value: performance.now() - startedAt };
    await sleep(1_000);
    const grown = settledRss() - rssBefore;
    const memory: Measured = { value: shardBytes(engine, instanceId) / scale.users, note: '(shard bitmaps)', details: { rssGrowthBytesAfterGc: grown } };

    const countSamples: number[] = [];
    for (let i = 0; i < 1_010; i++) {
      const before = performance.now();
      await engine.getCounts(tenant.id, instanceId);
      if (i >= 10) countSamples.push(performance.now() - before);
    }
    const counts: Measured = { value: percentile(countSamples, 99), note: `(p50 ${median(countSamples).toFixed(3)})` };

    const events = journeyEvents(scale.events, scale.users - RESERVED_USERS);
    const expected = expectedMoves(events, scale.users - RESERVED_USERS);
    // The objects the events route hands to appendEvents: decoded from the request's JSON, then normalised by
    // parseEventBatch (not copies of the generator's objects, whose heap layout V8 reads several times slower).
    const now = Date.now();
    const logged: LoggedEvent[] = [];
    for (let offset = 0; offset < events.length; offset += APPEND_BATCH) {
      logged.push(...parseEventBatch({ events: JSON.parse(JSON.stringify(events.slice(offset, offset + APPEND_BATCH))) }, now).events);
    }
    const apply = await profiled(profile, `engine only on ${database.provider}: apply`, async (): Promise<Measured> => {
      const tick = progress('engine only: events appended');
      const cpuBefore = process.cpuUsage();
      const started = performance.now();
      for (let offset = 0; offset < logged.length; offset += APPEND_BATCH) {
        await appendEvents(processDatabase(), app().state, tenant.id, logged.slice(offset, offset + APPEND_BATCH));
        engine.wakeTenant(tenant.id);
        tick(offset + APPEND_BATCH, logged.length);
      }
      const appendMs = performance.now() - started;
      const movesTick = progress('engine only: moves committed');
      for (;;) {
        const counts = await engine.getCounts(tenant.id, instanceId);
        const big = counts.steps.big ?? 0;
        const small = counts.steps.small ?? 0;
        movesTick(big + small, expected.big + expected.small);
        if (big === expected.big && small === expected.small) break;
        if (performance.now() - started > 600_000) throw new Error(`moves not all committed after 600 s: ${JSON.stringify(counts.steps)}`);
        await sleep(5);
      }
      const ms = performance.now() - started;
      const cpu = process.cpuUsage(cpuBefore);
      const cpuMs = (cpu.user + cpu.system) / 1000;
      const perCpuSecond = events.length / (cpuMs / 1000);
      return {
        value: events.length / (ms / 1000),
        note: `(${formatNumber(perCpuSecond)} per CPU-s, ingest included)`,
        details: {
          events: events.length,
          ms: Math.round(ms),
          appendMs: Math.round(appendMs),
          cpuMs: Math.round(cpuMs),
          eventsPerCpuSecond: Math.round(perCpuSecond),
        },
      };
    });
    await importPlans(tenant, scale.users);
    const routedStart = await profiled(profile, `engine only on ${database.provider}: routed start`, () => measureRoutedStart(engine, tenant, scale.users));
    const holdoutStart = await profiled(profile, `engine only on ${database.provider}: holdout start`, () => measureHoldoutStart(engine, tenant, scale.users));
    const exitStart = await profiled(profile, `engine only on ${database.provider}: exit start`, () => measureExitStart(engine, tenant, scale.users));
    return { start, routedStart, holdoutStart, exitStart, counts, apply, memory };
  } finally {
    await closeApp();
  }
}
