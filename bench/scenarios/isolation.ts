// "No tenant can stall or slow another" (issue 34): while tenant A does one big thing at a time, tenant B's counts
// (GET) and B's single-event POST /events are each sent sequentially at ~20/s from a thread of their own, and at the
// same moments the same requests go to a bare node:http server in a child process (the control), so the machine's
// load shows in the control too. Phases: idle; (a) A uploads a crowd of 2^27 users, starts an instance over it and
// stops it, again and again; (b) A upserts 1,000 profiles/s into a tenant of N profiles with a timer on a profile
// condition firing every second; (c) A imports 500k NDJSON profile lines; (d) A asks for an audience over the cost budget every 100 ms
// (its answers' statuses and latency are kept too); (e) A streams a 10M-user CSV step export; (f) A posts batches
// of within-budget regex events. Targets: B p99 ≤ control p99 + 10 ms and B max ≤ 100 ms in every phase, for counts
// and events; the costly audience answered 4xx within 100 ms.
import { loadavg } from 'node:os';
import { denseBitmap } from '../lib/data';
import type { ScratchDatabase } from '../lib/database';
import { startControlServer } from '../lib/control-server';
import { now, startProbe, windowStats, type ProbeRequest, type Window, type WindowStats } from '../lib/probe';
import { BENCH_ADMIN_TOKEN, call, download, startInstance, startServer, until, type BenchServer } from '../lib/server';
import { inWindow } from '../lib/windows';
import { A, B, COSTLY_CONDITION, importProfiles, type IsolationSizes, piecesOf, REGEX_SUBJECT, REGEX_USERS, setUpIsolation } from './isolation-setup';
import { profileStream } from './profiles';

export const ISOLATION_PHASES = ['idle', 'start', 'upserts', 'import', 'audience', 'exportCsv', 'regex'] as const;
export type IsolationPhase = (typeof ISOLATION_PHASES)[number];

export interface IsolationPhaseFigures {
  /** What A did, in words, with how much of it. */
  what: string;
  ms: number;
  counts?: WindowStats;
  events?: WindowStats;
  controlCounts?: WindowStats;
  controlEvents?: WindowStats;
}

export interface IsolationFigures {
  sizes: IsolationSizes;
  phases: Partial<Record<IsolationPhase, IsolationPhaseFigures>>;
  /** The costly audience answers of phase (d): latency and how many came back with each status. */
  audience?: WindowStats & { statuses: Record<string, number> };
  loadBefore: number[];
  loadAfter: number[];
}

const PROBE_INTERVAL_MS = 50;
const UPSERT_INTERVAL_MS = 100;
const UPSERTS_PER_SECOND = 1_000;
/** The route's bound on one call. */
const MAX_UPSERTS_PER_CALL = 10_000;
const AUDIENCE_INTERVAL_MS = 100;
const REGEX_BATCH = 100;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs `work` again and again, each run starting `intervalMs` after the last began, until `durationMs` is over. */
async function paced(durationMs: number, intervalMs: number, work: (round: number) => Promise<void>): Promise<number> {
  const end = now() + durationMs;
  let round = 0;
  for (let next = now(); now() < end; round++) {
    await work(round);
    next = Math.max(next + intervalMs, now());
    await sleep(next - now());
  }
  return round;
}

async function stopInstance(server: BenchServer, instanceId: string): Promise<void> {
  await call(server, 'POST', `/tenants/${A}/instances/${instanceId}/stop`);
  await until(
    async () => (await call<{ state: string }>(server, 'GET', `/tenants/${A}/instances/${instanceId}`)).state === 'stopped',
    300_000,
    `instance ${instanceId} stopped`,
  );
}

/** `only`: the phases to run (`--phases=`; the idle phase always runs, as the baseline). */
export async function measureIsolation(
  database: ScratchDatabase,
  sizes: IsolationSizes,
  profile = false,
  only: ReadonlySet<IsolationPhase> = new Set(ISOLATION_PHASES),
): Promise<IsolationFigures> {
  const loadBefore = loadavg();
  const server = await startServer(database.url, { profile });
  const control = await startControlServer();
  const windows: Partial<Record<IsolationPhase, Window & { what: string }>> = {};
  const phase = async (name: IsolationPhase, work: () => Promise<string>) => {
    if (name !== 'idle' && !only.has(name)) return;
    console.log(`  phase ${name}…`);
    const from = now();
    const what = await inWindow(`isolation on ${database.provider}: ${name}`, work);
    windows[name] = { from, to: now(), what };
  };
  try {
    const setup = await setUpIsolation(server, sizes);
    const auth = { authorization: `Bearer ${BENCH_ADMIN_TOKEN}` };
    const event = JSON.stringify({ tenant: B, events: [{ user: 1, type: 'view', data: {} }] });
    const post = (name: string, url: string, headers: Record<string, string> = {}): ProbeRequest => ({
      name,
      url,
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: event,
    });
    const probe = startProbe([
      {
        requests: [
          { name: 'counts', url: `${server.baseUrl}/api/v1/tenants/${B}/instances/${setup.probeInstance}/counts`, headers: auth },
          { name: 'controlCounts', url: `${control.baseUrl}/counts` },
        ],
        intervalMs: PROBE_INTERVAL_MS,
      },
      {
        requests: [post('events', `${server.baseUrl}/api/v1/events`, auth), post('controlEvents', `${control.baseUrl}/events`)],
        intervalMs: PROBE_INTERVAL_MS,
      },
    ]);

    await phase('idle', async () => {
      await sleep(sizes.phaseMs / 2);
      return 'nothing';
    });

    const huge = 2 ** sizes.startUsersLog2;
    const hugeCrowd = only.has('start') ? Buffer.from(denseBitmap(huge).serialize('portable')) : undefined;
    await phase('start', async () => {
      // Again and again for the phase's length: one start is over in ~0.1 s, too few of B's calls for a p99.
      const rounds = await paced(sizes.phaseMs, 0, async () => {
        await call(server, 'PUT', `/tenants/${A}/crowds/huge`, hugeCrowd, 'application/octet-stream');
        await stopInstance(server, await startInstance(server, A, setup.hugeWorkflow, 'huge', 'allow'));
      });
      return `uploads, starts and stops an instance over 2^${sizes.startUsersLog2} = ${huge.toLocaleString('en-US')} users (${rounds} times)`;
    });

    const timerInstance = only.has('upserts') ? await startInstance(server, A, setup.timerWorkflow, 'profiled') : '';
    if (timerInstance) await sleep(2_000); // its first firing moves the quarter of the users who are "pro" already
    await phase('upserts', async () => {
      // Each call sends what is owed at 1,000 a second since the phase began, so a slow answer does not lower the rate.
      const from = now();
      let upserted = 0;
      await paced(sizes.phaseMs, UPSERT_INTERVAL_MS, async () => {
        const owed = Math.min(MAX_UPSERTS_PER_CALL, Math.round(((now() - from) * UPSERTS_PER_SECOND) / 1000) - upserted);
        const profiles = Array.from({ length: Math.max(owed, 1) }, (_, i) => {
          const user = Math.imul(upserted + i, 2654435761) >>> 0;
          return { user: user % sizes.profiles, attributes: { plan: i % 2 === 0 ? 'pro' : 'free', age: 18 + (user % 63) } };
        });
        await call(server, 'POST', `/tenants/${A}/profiles`, profiles);
        upserted += profiles.length;
      });
      const seconds = (now() - from) / 1000;
      return (
        `upserts ${upserted.toLocaleString('en-US')} profiles in ${seconds.toFixed(0)} s (${Math.round(upserted / seconds)}/s) ` +
        `into ${sizes.profiles.toLocaleString('en-US')}, a profile timer firing every second`
      );
    });
    if (timerInstance) await stopInstance(server, timerInstance);

    const importPieces = await piecesOf(profileStream(sizes.importLines, 5_000, sizes.profiles));
    await phase('import', async () => {
      await importProfiles(server, importPieces);
      return `imports ${sizes.importLines.toLocaleString('en-US')} NDJSON profile lines`;
    });

    let audience: IsolationFigures['audience'];
    await phase('audience', async () => {
      const asker = startProbe([
        {
          requests: [
            {
              name: 'audience',
              url: `${server.baseUrl}/api/v1/tenants/${A}/audience`,
              method: 'POST',
              headers: { ...auth, 'content-type': 'application/json' },
              body: JSON.stringify({ condition: COSTLY_CONDITION }),
            },
          ],
          intervalMs: AUDIENCE_INTERVAL_MS,
        },
      ]);
      await sleep(sizes.phaseMs);
      const samples = (await asker.stop()).audience;
      const statuses: Record<string, number> = {};
      for (const s of samples) statuses[s.status] = (statuses[s.status] ?? 0) + 1;
      const stats = windowStats(samples, { from: 0, to: Number.POSITIVE_INFINITY });
      if (stats) audience = { ...stats, statuses };
      return `asks for an audience over the cost budget every ${AUDIENCE_INTERVAL_MS} ms (${samples.length} asked)`;
    });

    await phase('exportCsv', async () => {
      const { bytes, ms } = await download(server, `/tenants/${A}/instances/${setup.exportInstance}/steps/wait/export?format=csv`);
      return `streams a ${sizes.exportUsers.toLocaleString('en-US')}-user CSV step export (${(bytes / 2 ** 20).toFixed(0)} MiB in ${ms.toFixed(0)} ms)`;
    });

    await phase('regex', async () => {
      let batch = 0;
      const batches = await paced(sizes.phaseMs, 0, async () => {
        const events = Array.from({ length: REGEX_BATCH }, (_, i) => ({
          user: (batch * REGEX_BATCH + i) % REGEX_USERS,
          type: 'msg',
          data: { s: REGEX_SUBJECT },
        }));
        batch++;
        await call(server, 'POST', '/events', { tenant: A, events });
      });
      return `posts ${batches} batches of ${REGEX_BATCH} within-budget regex events (${REGEX_SUBJECT.length}-character strings), one batch at a time`;
    });

    const samples = await probe.stop();
    const phases: IsolationFigures['phases'] = {};
    for (const name of ISOLATION_PHASES) {
      const window = windows[name];
      if (!window) continue;
      phases[name] = {
        what: window.what,
        ms: Math.round(window.to - window.from),
        counts: windowStats(samples.counts, window),
        events: windowStats(samples.events, window),
        controlCounts: windowStats(samples.controlCounts, window),
        controlEvents: windowStats(samples.controlEvents, window),
      };
    }
    return { sizes, phases, audience, loadBefore, loadAfter: loadavg() };
  } catch (error) {
    console.log(`    server log (last lines):\n    ${server.log().split('\n').slice(-15).join('\n    ')}`);
    throw error;
  } finally {
    await control.stop();
    await server.stop();
  }
}
