// The journey scenarios end to end over HTTP against a real server (server/main.ts) on a scratch database:
// crowd upload, instance start, counts, SSE, exports, events applied, a timer step, memory and restart recovery.
// Each step records its figure or why it could not be measured, and the next steps go on where they can.
import { RoaringBitmap32 } from '../../server/crowd/bitmap';
import { BRANCH_JOURNEY, expectedMoves, journeyEvents, timerJourney, type BenchEvent } from '../lib/data';
import type { ScratchDatabase } from '../lib/database';
import { clientFloor, measureGets } from '../lib/latency';
import { formatNumber, median, percentile, progress } from '../lib/report';
import { ApiError, BENCH_ADMIN_TOKEN, call, download, startServer, type BenchServer } from '../lib/server';
import { subscribeCounts, type CountsJson } from '../lib/sse';
import { inWindow } from '../lib/windows';

export const TENANT = 'bench';
export const PARTITIONS = 8;
/** The top users of the crowd are kept out of the event stream for the SSE probes. */
const RESERVED_USERS = 1_000;
const EVENT_BATCH = 1_000;
const IN_FLIGHT = 4;

export interface JourneyOptions {
  users: number;
  crowdText: Buffer;
  events: number;
  countReads: number;
  sseSamples: number;
  recoveryMoves: number;
  profile: boolean;
  /** Only these steps (by the names the run prints: `counts`, `sse`, `events`, …); the instance always starts. */
  steps?: string[];
}

export type Measured = { value: number | null; note?: string; details?: Record<string, unknown> };

export type JourneyFigures = Record<
  'uploadText' | 'start' | 'counts' | 'sse' | 'exportCsv' | 'exportRoaring' | 'memory' | 'apply' | 'timer' | 'recovery',
  Measured
>;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs `work`; a failure becomes a figure without a value whose note says what failed. */
async function attempt(label: string, work: () => Promise<Measured>, server?: () => BenchServer): Promise<Measured> {
  try {
    return await inWindow(label, work);
  } catch (error) {
    const message = (error as Error).message.split('\n')[0].slice(0, 160);
    console.log(`  ! ${label}: ${message}`);
    const problems = server?.()
      .log()
      .split('\n')
      .filter((line) => /error|fail|warn/i.test(line))
      .slice(-8);
    if (problems?.length) console.log(`    server log:\n    ${problems.join('\n    ')}`);
    return { value: null, note: message };
  }
}

async function waitForState(server: BenchServer, instanceId: string, wanted: string, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const instance = await call<{ state: string }>(server, 'GET', `/tenants/${TENANT}/instances/${instanceId}`);
    if (instance.state === wanted) return;
    if (instance.state === 'failed' || instance.state === 'stopped') throw new Error(`instance ${instanceId} is ${instance.state}`);
    if (performance.now() > deadline) throw new Error(`instance ${instanceId} not ${wanted} after ${timeoutMs} ms (still ${instance.state})`);
    await sleep(5);
  }
}

async function counts(server: Pick<BenchServer, 'baseUrl'>, instanceId: string): Promise<CountsJson> {
  return call<CountsJson>(server, 'GET', `/tenants/${TENANT}/instances/${instanceId}/counts`);
}

/** Polls counts until `done` says so; returns the wall time (performance.now) it was first seen. */
async function waitForCounts(
  server: BenchServer,
  instanceId: string,
  done: (c: CountsJson) => boolean,
  timeoutMs: number,
  intervalMs: number,
  onPoll?: (c: CountsJson) => void,
): Promise<number> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const current = await counts(server, instanceId).catch((error) => {
      // A restarted server answers 503 partition_recovering until the tenant's partitions are loaded: ask again.
      if (error instanceof ApiError && error.status === 503) return undefined;
      throw error;
    });
    const seenAt = performance.now();
    if (current) onPoll?.(current);
    if (current && done(current)) return seenAt;
    if (seenAt > deadline) throw new Error(`counts not reached within ${timeoutMs} ms: ${JSON.stringify(current?.steps ?? 'still recovering')}`);
    await sleep(intervalMs);
  }
}

async function createWorkflow(server: BenchServer, name: string, definition: object): Promise<string> {
  return (await call<{ id: string }>(server, 'POST', `/tenants/${TENANT}/workflows`, { name, definition })).id;
}

async function startInstance(server: BenchServer, workflowId: string, timeoutMs: number): Promise<{ instanceId: string; ms: number }> {
  const started = performance.now();
  const { instanceId } = await call<{ instanceId: string }>(server, 'POST', `/tenants/${TENANT}/workflows/${workflowId}/start`, { crowd: 'all' });
  await waitForState(server, instanceId, 'running', timeoutMs);
  return { instanceId, ms: performance.now() - started };
}

export async function measureJourney(database: ScratchDatabase, options: JourneyOptions): Promise<JourneyFigures> {
  const { users } = options;
  const label = `http on ${database.provider}`;
  let server = await startServer(database.url, { profile: options.profile });
  const figures = {} as JourneyFigures;
  const wanted = (name: string) => name === 'start' || !options.steps || options.steps.includes(name);
  const tryStep = (name: string, work: () => Promise<Measured>) =>
    wanted(name) ? attempt(`${label}: ${name}`, work, () => server) : Promise.resolve({ value: null, note: 'not run (--steps)' });
  try {
    await call(server, 'POST', '/tenants', { name: TENANT, partitions: PARTITIONS });
    const dense = new RoaringBitmap32();
    dense.addRange(0, users);
    await call(server, 'PUT', `/tenants/${TENANT}/crowds/all`, Buffer.from(dense.serialize('portable')), 'application/octet-stream');

    figures.uploadText = await tryStep('text upload', async () => {
      const started = performance.now();
      const crowd = await call<{ count: number }>(server, 'PUT', `/tenants/${TENANT}/crowds/uploaded`, options.crowdText, 'text/plain');
      return { value: performance.now() - started, details: { users: crowd.count, bytes: options.crowdText.length } };
    });

    const branchId = await createWorkflow(server, 'branch', BRANCH_JOURNEY);
    let branch: { instanceId: string; ms: number } | undefined;
    figures.start = await tryStep('start', async () => {
      const cpuBefore = server.cpuMs();
      branch = await startInstance(server, branchId, 300_000);
      const serverCpuMs = server.cpuMs() - cpuBefore;
      return { value: branch.ms, note: `(server CPU ${serverCpuMs} ms)`, details: { serverCpuMs } };
    });
    const notStarted = { value: null, note: 'instance did not start' };
    if (!branch) {
      Object.assign(figures, {
        counts: notStarted,
        sse: notStarted,
        exportCsv: notStarted,
        exportRoaring: notStarted,
        memory: notStarted,
        apply: notStarted,
        timer: notStarted,
        recovery: notStarted,
      });
      return figures;
    }
    const instanceId = branch.instanceId;
    console.log(`  ${label}: instance of ${users.toLocaleString('en-US')} users running after ${branch.ms.toFixed(0)} ms`);

    figures.counts = await tryStep('counts', async () => {
      const path = `/api/v1/tenants/${TENANT}/instances/${instanceId}/counts`;
      const latency = await measureGets(server.baseUrl, path, { authorization: `Bearer ${BENCH_ADMIN_TOKEN}` }, options.countReads, (body) => {
        const total = (JSON.parse(body) as CountsJson).total;
        if (total !== users) throw new Error(`counts total ${total}, expected ${users}`);
      });
      const floor = await clientFloor(options.countReads, JSON.stringify(await counts(server, instanceId)));
      return {
        value: latency.p99Ms,
        note: `(p50 ${latency.p50Ms.toFixed(1)}; bare node:http server p99 ${floor.p99Ms.toFixed(1)})`,
        details: { p50Ms: latency.p50Ms, reads: options.countReads, client: 'node:http, one kept-alive connection', bareServer: floor },
      };
    });

    const exportPath = (format: string) => `/tenants/${TENANT}/instances/${instanceId}/steps/wait/export?format=${format}`;
    figures.exportCsv = await tryStep('export csv', async () => {
      const runs = [await download(server, exportPath('csv')), await download(server, exportPath('csv'))];
      return { value: Math.min(...runs.map((r) => r.ms)), details: { bytes: runs[0].bytes, runs: runs.map((r) => Math.round(r.ms)) } };
    });
    figures.exportRoaring = await tryStep('export roaring', async () => {
      const runs = [];
      for (let i = 0; i < 3; i++) runs.push(await download(server, exportPath('roaring')));
      return { value: median(runs.map((r) => r.ms)), details: { bytes: runs[0].bytes } };
    });

    let bigBefore = 0;
    figures.sse = await tryStep('sse', async () => {
      const result = await measureSse(server, instanceId, users, options.sseSamples);
      bigBefore = result.moved;
      return result.figure;
    });

    const events = journeyEvents(options.events, users - RESERVED_USERS);
    figures.apply = await tryStep('events', () => measureApply(server, instanceId, events, users - RESERVED_USERS, bigBefore, label));

    let memory: Measured = { value: null, note: 'timer instance did not start' };
    figures.timer = await tryStep('timer', async () => {
      const result = await measureTimer(server, users, branch!.ms, label);
      memory = result.memory;
      return result.timer;
    });
    figures.memory = memory;

    figures.recovery = await tryStep('recovery', async () => {
      const moved = movedUsers(events, users - RESERVED_USERS);
      const result = await measureRecovery(database, server, instanceId, moved, options);
      server = result.server;
      return result.figure;
    });
    return figures;
  } finally {
    await server.stop();
  }
}

/** Single-user moves one at a time: from just before the event is sent until the subscriber sees the new count. */
async function measureSse(server: BenchServer, instanceId: string, users: number, samples: number): Promise<{ figure: Measured; moved: number }> {
  let latest: CountsJson | undefined;
  const waiters: { big: number; resolve: (at: number) => void }[] = [];
  const unsubscribe = await subscribeCounts(server, `/tenants/${TENANT}/instances/${instanceId}/counts/stream`, (current, at) => {
    latest = current;
    for (const waiter of [...waiters]) {
      if ((current.steps.big ?? 0) >= waiter.big) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(at);
      }
    }
  });
  try {
    const latencies: number[] = [];
    let moved = 0;
    for (let i = 0; i < samples; i++) {
      const expectedBig = moved + 1;
      const seen = new Promise<number>((resolve, reject) => {
        waiters.push({ big: expectedBig, resolve });
        setTimeout(() => reject(new Error(`move ${i + 1} not seen on the stream within 10 s (last counts ${JSON.stringify(latest?.steps)})`)), 10_000);
      });
      const sent = performance.now();
      await call(server, 'POST', '/events', { tenant: TENANT, events: [{ user: users - 1 - i, type: 'purchase', data: { amount: 500 } }] });
      latencies.push((await seen) - sent);
      moved++;
      await sleep(20 + (i % 7) * 10);
    }
    return {
      figure: {
        value: percentile(latencies, 99),
        note: `(p50 ${median(latencies).toFixed(0)})`,
        details: { p50Ms: median(latencies), samples: latencies.length },
      },
      moved,
    };
  } finally {
    unsubscribe();
  }
}

/** Posts the events in batches of EVENT_BATCH, IN_FLIGHT batches at a time. */
async function postInBatches(server: BenchServer, events: BenchEvent[], what: string): Promise<void> {
  const bodies: string[] = [];
  for (let offset = 0; offset < events.length; offset += EVENT_BATCH)
    bodies.push(JSON.stringify({ tenant: TENANT, events: events.slice(offset, offset + EVENT_BATCH) }));
  const tick = progress(what);
  let next = 0;
  const sender = async () => {
    while (next < bodies.length) {
      const body = bodies[next++];
      await call(server, 'POST', '/events', body, 'application/json');
      tick(next * EVENT_BATCH, events.length);
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, sender));
}

/** Batches of 1,000 events, IN_FLIGHT at a time, from the first send until the counts show every expected move. */
async function measureApply(server: BenchServer, instanceId: string, events: BenchEvent[], users: number, bigBefore: number, label: string): Promise<Measured> {
  const expected = expectedMoves(events, users);
  const cpuBefore = server.cpuMs();
  const started = performance.now();
  await postInBatches(server, events, `${label}: events sent`);
  const acceptedMs = performance.now() - started;
  const movesWanted = expected.big + expected.small;
  const appliedTick = progress(`${label}: moves committed`);
  let lastMoved = 0;
  const seenAt = await waitForCounts(
    server,
    instanceId,
    (c) => (c.steps.big ?? 0) - bigBefore === expected.big && (c.steps.small ?? 0) === expected.small,
    600_000,
    20,
    (c) => {
      lastMoved = (c.steps.big ?? 0) - bigBefore + (c.steps.small ?? 0);
      appliedTick(lastMoved, movesWanted);
    },
  );
  const ms = seenAt - started;
  const serverCpuMs = server.cpuMs() - cpuBefore;
  const perCpuSecond = events.length / (serverCpuMs / 1000);
  return {
    value: events.length / (ms / 1000),
    note: `(${formatNumber(perCpuSecond)} per server CPU-s)`,
    details: {
      events: events.length,
      ms: Math.round(ms),
      serverCpuMs,
      eventsPerServerCpuSecond: Math.round(perCpuSecond),
      acceptedEventsPerSecond: Math.round(events.length / (acceptedMs / 1000)),
      moves: movesWanted,
    },
  };
}

/**
 * A second instance whose entry step is a timer firing at a known second; figure = fire time → counts show all
 * moved. Its start also gives the memory figure: the server's RSS growth across starting a second dense instance
 * (the first one already loaded the code paths), sampled after it settles and before the timer fires.
 */
async function measureTimer(server: BenchServer, users: number, startMs: number, label: string): Promise<{ timer: Measured; memory: Measured }> {
  const fireAt = new Date(Math.ceil((Date.now() + Math.max(10_000, 3 * startMs + 6_000)) / 1000) * 1000);
  const workflowId = await createWorkflow(server, 'timer', timerJourney(fireAt));
  const rssBefore = server.rssBytes();
  const { instanceId } = await startInstance(server, workflowId, 300_000);
  await sleep(2_000);
  const grown = server.rssBytes() - rssBefore;
  const memory: Measured = { value: grown / users, note: '(RSS growth)', details: { rssBeforeBytes: rssBefore, rssGrowthBytes: grown } };
  const untilFire = fireAt.getTime() - Date.now();
  if (untilFire < 200) throw new Error('the timer instance started after its fire time; rerun');
  await sleep(untilFire - 150);
  const cpuBefore = server.cpuMs();
  const seenAt = await inWindow(`${label}: timer fired → counts`, () => waitForCounts(server, instanceId, (c) => (c.steps.done ?? 0) === users, 120_000, 2));
  const firePerf = performance.now() - (Date.now() - fireAt.getTime());
  const serverCpuMs = server.cpuMs() - cpuBefore;
  return { timer: { value: seenAt - firePerf, note: `(server CPU ${serverCpuMs} ms)`, details: { fireAt: fireAt.toISOString(), serverCpuMs } }, memory };
}

function movedUsers(events: BenchEvent[], users: number): Uint8Array {
  const moved = new Uint8Array(users);
  for (const event of events) if (event.type === 'purchase') moved[event.user] = 1;
  return moved;
}

/**
 * The engine moves `recoveryMoves` users wait → small (one purchase event each, over HTTP like the events step), the
 * server is SIGKILLed once the counts show them, and the figure is spawn → counts showing them again. What replay
 * reads is what the engine's own checkpoints left after them (a partition checkpoints after 100,000 moves or 5 s):
 * until session 25 the rows were written into the journal behind a stopped server, 1M rows past the checkpoint, which
 * the engine never leaves behind.
 */
async function measureRecovery(
  database: ScratchDatabase,
  server: BenchServer,
  instanceId: string,
  moved: Uint8Array,
  options: JourneyOptions,
): Promise<{ figure: Measured; server: BenchServer }> {
  const before = await counts(server, instanceId);
  const purchases: BenchEvent[] = [];
  for (let user = 0; user < moved.length && purchases.length < options.recoveryMoves; user++) {
    if (!moved[user]) purchases.push({ user, type: 'purchase', data: { amount: 50 } });
  }
  const wantedSmall = (before.steps.small ?? 0) + purchases.length;
  await postInBatches(server, purchases, `recovery on ${database.provider}: moves sent`);
  await waitForCounts(server, instanceId, (c) => (c.steps.small ?? 0) === wantedSmall, 600_000, 20);
  await server.kill();
  const [{ rows }] = await database.query<{ rows: string | number }>(
    `SELECT COUNT(*) AS "rows" FROM "Journal" j LEFT JOIN "ShardCheckpoint" c ON c."instanceId" = j."instanceId" AND c."partition" = j."partition"
     WHERE j."instanceId" = ? AND j."seq" > COALESCE(c."journalSeq", 0)`,
    [instanceId],
  );
  const started = performance.now();
  const { restarted, seenAt } = await inWindow(`http on ${database.provider}: restart → recovered counts`, async () => {
    // Asked from the spawn on: the server answers counts itself before Next.js is ready (server/main.ts), so waiting
    // for one of Next's routes first would add Next's boot to the figure (until session 27 it did).
    const restarted = await startServer(database.url, {
      profile: options.profile,
      answering: async (listening) => ((await counts(listening, instanceId)).steps.small ?? 0) === wantedSmall,
    });
    return { restarted, seenAt: performance.now() };
  });
  const note = `(an empty database's boot until Next.js answered: ${server.bootMs.toFixed(0)}; ${Number(rows).toLocaleString('en-US')} journal rows past the checkpoints)`;
  return {
    figure: {
      value: seenAt - started,
      note,
      details: {
        moves: purchases.length,
        journalRowsReplayed: Number(rows),
        emptyDatabaseBootMs: Math.round(server.bootMs),
      },
    },
    server: restarted,
  };
}
