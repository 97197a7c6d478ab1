// "API latency under engine load": per-step counts read over HTTP (one kept-alive connection, sequential GETs, as
// a live canvas does) while the engine works hard on the same server: (a) 1M events applied as fast as they arrive,
// (b) a timer moving every user of a 10M-user instance, (c) an instance over 10M users starting, (d) a 10M-user
// CSV export streaming. The probe reads the counts of an instance in ANOTHER tenant, the one whose user only wants
// an answer: "whatever any tenant sends, every other request is answered promptly". Each phase reports the counts
// latency p99 and max seen while it ran (issue 13 targets: p99 ≤ 50 ms, max ≤ 200 ms).
import { Worker } from 'node:worker_threads';
import { RoaringBitmap32 } from '../../server/crowd/bitmap';
import { BRANCH_JOURNEY, expectedMoves, journeyEvents, timerJourney } from '../lib/data';
import type { ScratchDatabase } from '../lib/database';
import { median, percentile } from '../lib/report';
import { BENCH_ADMIN_TOKEN, call, download, postEvents, startServer, type BenchServer } from '../lib/server';
import type { CountsJson } from '../lib/sse';
import { inWindow } from '../lib/windows';
import type { Measured } from './journey';

const BUSY = 'busy';
const PROBE = 'probe';
const EVENT_BATCH = 1_000;
const IN_FLIGHT = 4;

export type LoadPhase = 'apply' | 'timer' | 'start' | 'exportCsv';
export type LoadFigures = Record<LoadPhase, Measured> & { idle: Measured };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// The probe runs on a thread of its own: this process's own work (building 1M events, downloading a 74 MiB export,
// its garbage collections) must not show up as server latency. Plain CommonJS evaluated in the worker; sample times
// are absolute (timeOrigin + now), since each thread has its own performance clock.
const PROBE_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const http = require('node:http');
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const samples = [];
let running = true;
const now = () => performance.timeOrigin + performance.now();
const get = () => new Promise((resolve, reject) => {
  const request = http.get(workerData.url, { agent, headers: workerData.headers }, (response) => {
    response.resume();
    response.on('end', () => (response.statusCode === 200 ? resolve() : reject(new Error('GET counts: ' + response.statusCode))));
  });
  request.on('error', reject);
});
parentPort.on('message', () => (running = false));
(async () => {
  while (running) {
    const at = now();
    await get();
    samples.push({ at, ms: now() - at });
  }
  parentPort.postMessage(samples);
})().catch((error) => parentPort.postMessage({ error: String(error) }));
`;

/** Sequential counts GETs until stopped; each sample keeps when it was sent, so phases pick theirs afterwards. */
function startProbe(server: BenchServer, path: string): { stop(): Promise<{ at: number; ms: number }[]> } {
  const worker = new Worker(PROBE_SOURCE, {
    eval: true,
    workerData: { url: `${server.baseUrl}${path}`, headers: { authorization: `Bearer ${BENCH_ADMIN_TOKEN}` } },
  });
  const result = new Promise<{ at: number; ms: number }[]>((resolve, reject) => {
    worker.once('message', (message: { at: number; ms: number }[] | { error: string }) =>
      'error' in message ? reject(new Error(`counts probe: ${message.error}`)) : resolve(message),
    );
    worker.once('error', reject);
  });
  result.catch(() => undefined); // reported by stop()
  return {
    async stop() {
      worker.postMessage('stop');
      const samples = await result;
      await worker.terminate();
      return samples;
    },
  };
}

/** Absolute time, comparable with the probe thread's sample times. */
const now = () => performance.timeOrigin + performance.now();

async function countsOf(server: BenchServer, tenant: string, instanceId: string): Promise<CountsJson> {
  return call<CountsJson>(server, 'GET', `/tenants/${tenant}/instances/${instanceId}/counts`);
}

async function until(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`${what} not reached within ${timeoutMs} ms`);
    await sleep(10);
  }
}

async function startInstance(server: BenchServer, tenant: string, workflowId: string, crowd: string): Promise<string> {
  const { instanceId } = await call<{ instanceId: string }>(server, 'POST', `/tenants/${tenant}/workflows/${workflowId}/start`, { crowd });
  await until(
    async () => (await call<{ state: string }>(server, 'GET', `/tenants/${tenant}/instances/${instanceId}`)).state === 'running',
    300_000,
    `instance ${instanceId} running`,
  );
  return instanceId;
}

async function workflow(server: BenchServer, tenant: string, name: string, definition: object): Promise<string> {
  return (await call<{ id: string }>(server, 'POST', `/tenants/${tenant}/workflows`, { name, definition })).id;
}

export async function measureLoadLatency(database: ScratchDatabase, options: { users: number; events: number; profile?: boolean }): Promise<LoadFigures> {
  const { users } = options;
  const server = await startServer(database.url, { profile: options.profile });
  const windows: Partial<Record<LoadPhase | 'idle', { from: number; to: number; note?: string }>> = {};
  const phase = async (name: LoadPhase | 'idle', work: () => Promise<string | void>) => {
    const from = now();
    const note = await inWindow(`load latency on ${database.provider}: ${name}`, work);
    windows[name] = { from, to: now(), ...(note ? { note } : {}) };
  };
  try {
    for (const tenant of [BUSY, PROBE]) await call(server, 'POST', '/tenants', { name: tenant, partitions: 8 });
    const dense = new RoaringBitmap32();
    dense.addRange(0, users);
    await call(server, 'PUT', `/tenants/${BUSY}/crowds/all`, Buffer.from(dense.serialize('portable')), 'application/octet-stream');
    await call(server, 'PUT', `/tenants/${PROBE}/crowds/few`, '1\n2\n3\n', 'text/plain');
    const probeInstance = await startInstance(server, PROBE, await workflow(server, PROBE, 'probe', BRANCH_JOURNEY), 'few');
    const busyInstance = await startInstance(server, BUSY, await workflow(server, BUSY, 'branch', BRANCH_JOURNEY), 'all');
    const probe = startProbe(server, `/api/v1/tenants/${PROBE}/instances/${probeInstance}/counts`);

    await phase('idle', async () => void (await sleep(2_000)));

    await phase('apply', async () => {
      const events = journeyEvents(options.events, users);
      const expected = expectedMoves(events, users);
      const bodies: string[] = [];
      for (let offset = 0; offset < events.length; offset += EVENT_BATCH)
        bodies.push(JSON.stringify({ tenant: BUSY, events: events.slice(offset, offset + EVENT_BATCH) }));
      let next = 0;
      const sender = async () => {
        for (let batch = next++; batch < bodies.length; batch = next++) await postEvents(server, bodies[batch], `load-${batch}`);
      };
      await Promise.all(Array.from({ length: IN_FLIGHT }, sender));
      await until(
        async () => {
          const c = await countsOf(server, BUSY, busyInstance);
          return (c.steps.big ?? 0) === expected.big && (c.steps.small ?? 0) === expected.small;
        },
        600_000,
        'every move of the events',
      );
      return `${options.events.toLocaleString('en-US')} events`;
    });

    // The timer instance starts (phase c), then its timer moves all of its users at once (phase b).
    const fireAt = new Date(Math.ceil((Date.now() + 20_000) / 1000) * 1000);
    const timerWorkflow = await workflow(server, BUSY, 'timer', timerJourney(fireAt));
    let timerInstance = '';
    await phase('start', async () => {
      timerInstance = await startInstance(server, BUSY, timerWorkflow, 'all');
    });
    const untilFire = fireAt.getTime() - Date.now();
    if (untilFire < 300) throw new Error('the timer instance started after its fire time; rerun');
    await sleep(untilFire - 200);
    await phase('timer', () =>
      until(async () => ((await countsOf(server, BUSY, timerInstance)).steps.done ?? 0) === users, 120_000, 'the timer moving every user'),
    );

    await phase('exportCsv', async () => {
      const { bytes, ms } = await download(server, `/tenants/${BUSY}/instances/${busyInstance}/steps/wait/export?format=csv`);
      return `${(bytes / 2 ** 20).toFixed(0)} MiB in ${ms.toFixed(0)} ms`;
    });

    const samples = await probe.stop();
    const figure = (name: LoadPhase | 'idle'): Measured => {
      const window = windows[name];
      if (!window) return { value: null, note: 'not run' };
      const inside = samples.filter((s) => s.at >= window.from && s.at <= window.to).map((s) => s.ms);
      if (inside.length === 0) return { value: null, note: 'no counts answer during the phase' };
      const max = Math.max(...inside);
      return {
        value: percentile(inside, 99),
        note: `(max ${max.toFixed(0)}, p50 ${median(inside).toFixed(1)}, ${inside.length} reads${window.note ? `; ${window.note}` : ''})`,
        details: { maxMs: max, p50Ms: median(inside), reads: inside.length, phaseMs: Math.round(window.to - window.from) },
      };
    };
    return { idle: figure('idle'), apply: figure('apply'), timer: figure('timer'), start: figure('start'), exportCsv: figure('exportCsv') };
  } catch (error) {
    console.log(`    cause: ${String((error as { cause?: unknown }).cause ?? 'none')}; server process alive: ${server.rssBytes() > 0}`);
    console.log(`    server log (last lines):\n    ${server.log().split('\n').slice(-15).join('\n    ')}`);
    throw error;
  } finally {
    await server.stop();
  }
}
