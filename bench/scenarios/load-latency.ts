// "API latency under engine load": per-step counts read over HTTP (one kept-alive connection, sequential GETs, as
// a live canvas does) while the engine works hard on the same server: (a) 1M events applied as fast as they arrive,
// (b) a timer moving every user of a 10M-user instance, (c) an instance over 10M users starting, (d) a 10M-user
// CSV export streaming. The probe reads the counts of an instance in ANOTHER tenant, the one whose user only wants
// an answer: "whatever any tenant sends, every other request is answered promptly". Each phase reports the counts
// latency p99 and max seen while it ran (issue 13 targets: p99 ≤ 50 ms, max ≤ 200 ms).
import { RoaringBitmap32 } from '../../server/crowd/bitmap';
import { BRANCH_JOURNEY, expectedMoves, journeyEvents, timerJourney } from '../lib/data';
import type { ScratchDatabase } from '../lib/database';
import { now, startProbe, windowStats } from '../lib/probe';
import { BENCH_ADMIN_TOKEN, call, download, postEvents, startInstance, startServer, until, workflow, type BenchServer } from '../lib/server';
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

async function countsOf(server: BenchServer, tenant: string, instanceId: string): Promise<CountsJson> {
  return call<CountsJson>(server, 'GET', `/tenants/${tenant}/instances/${instanceId}/counts`);
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
    // Back to back from a thread of its own (bench/lib/probe.ts), as a live canvas polls.
    const probe = startProbe([
      {
        requests: [
          {
            name: 'counts',
            url: `${server.baseUrl}/api/v1/tenants/${PROBE}/instances/${probeInstance}/counts`,
            headers: { authorization: `Bearer ${BENCH_ADMIN_TOKEN}` },
          },
        ],
        intervalMs: 0,
      },
    ]);

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

    const samples = (await probe.stop()).counts;
    const failed = samples.find((s) => s.status !== 200);
    if (failed) throw new Error(`GET counts: ${failed.status}`);
    const figure = (name: LoadPhase | 'idle'): Measured => {
      const window = windows[name];
      if (!window) return { value: null, note: 'not run' };
      const stats = windowStats(samples, window);
      if (!stats) return { value: null, note: 'no counts answer during the phase' };
      return {
        value: stats.p99Ms,
        note: `(max ${stats.maxMs.toFixed(0)}, p50 ${stats.p50Ms.toFixed(1)}, ${stats.samples} reads${window.note ? `; ${window.note}` : ''})`,
        details: { maxMs: stats.maxMs, p50Ms: stats.p50Ms, reads: stats.samples, phaseMs: Math.round(window.to - window.from) },
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
