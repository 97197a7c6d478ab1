// Cost per tenant (issue 33; part of `npm run bench`, alone: `--only=tenants [--tenants=1,100] [--tenants-window=15]`):
// N tenants, each one running 10,000-user instance of a workflow whose users a timer moves every minute, on a real
// server (server/main.ts) otherwise idle. The two timer steps fire on alternate minutes and each moves the whole
// crowd to the other, so every instance moves 10,000 users each minute and each minute's firing shows in its counts.
// At each N (tenants are added, not recreated): the first minute's firing (the last tenant's commit after the minute,
// from the Journal, and its counts over the API), the server's CPU over an idle window holding the next minute's
// firing (its threads, and on PostgreSQL the backends serving it), RSS, start → counted of another instance, and a
// restart (SIGTERM, then spawn → first answered count, and → every tenant's count).
import type { ScratchDatabase } from '../lib/database';
import { backendsOf, watchActivity } from '../lib/pg-activity';
import { busiestThreads, cpuBetween, processCpuMs, processesCpuMs, threadCpu } from '../lib/proc';
import { median } from '../lib/report';
import { call, listenedAfterMs, startServer, type BenchServer } from '../lib/server';
import { inWindow } from '../lib/windows';
import {
  addTenants,
  counts,
  retried,
  SWEEP_CONCURRENCY,
  sweep,
  sweepUntilAll,
  type Tenant,
  TICK_WORKFLOW,
  tickCrowd,
  untilCounted,
  USERS,
} from './tenants-setup';

const STARTS_PER_LEVEL = 3;
const MINUTE = 60_000;
/** How long a minute's firing is watched before the tenants not seen yet are reported as not fired. */
export const FIRING_WATCH_MS = 50_000;
/** The Journal poll's period: the committed figure's resolution. */
const COMMIT_POLL_MS = 50;

/** Where the users of an instance are once the timers of the minute starting at `boundary` have fired. */
const stepAfter = (boundary: number) => (Math.round(boundary / MINUTE) % 2 === 0 ? 'pong' : 'ping');
const otherStep = (step: string) => (step === 'ping' ? 'pong' : 'ping');

export interface TenantsOptions {
  levels: number[];
  /** Length of the idle CPU window (60 s in a full run: it then holds one minute's firing). */
  windowMs: number;
  /** CPU-profile every server (written when it stops: at each restart and at the end). */
  profile?: boolean;
}

/** When the due tenants' firing of one minute was seen, in ms after the minute. */
export interface Firing {
  boundary: string;
  due: number;
  fired: number;
  lastMs: number | null;
  p50Ms: number | null;
}

export interface TenantLevel {
  tenants: number;
  setupMs: number;
  /** Setup requests asked again after a 503 (the database busy). */
  setupRetries: number;
  /** Instances whose start procedure failed during setup (started again). */
  failedStarts: number;
  /** The minute's firing seen in the counts API (swept: `sweepMs` is one sweep of every tenant, the resolution). */
  firingVisible: Firing & { sweepMs: number };
  /** CPU of the server's busiest threads from the minute until the firing was seen (counts sweeps included). */
  firingThreads: { thread: string; cpuMs: number }[];
  /** PostgreSQL: what the server's backends were doing meanwhile (pg_stat_activity sampled every 20 ms). */
  firingActivity?: string;
  /** The same minute's firing as committed (the Journal polled every COMMIT_POLL_MS). */
  firingCommitted: Firing;
  /** The next minute's firing, committed, inside the idle window (a full window only). */
  firingIdle?: Firing;
  idleCpuPercent: number;
  /** The same window without the seconds around a firing (from 1 s before the minute to 5 s after its last commit). */
  idleCpuBetweenFiringsPercent: number;
  /** The window's CPU second by second: [seconds after the first minute's firing, ms of CPU in the second before]. */
  cpuPerSecond: [number, number][];
  windowMs: number;
  busiestThreads: { thread: string; cpuMs: number }[];
  /** PostgreSQL backends serving the server's connections at the window's start and end (% of a core). */
  postgresCpuPercent?: number;
  rssBytes: number;
  startToCountedMs: number[];
  restart: { stopMs: number; listenMs: number; firstCountMs: number; allCountsMs: number };
}

export interface TenantFigures {
  levels: TenantLevel[];
  /** The level that failed, and why (the levels before it were measured). */
  error?: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));
const sleepUntil = (epochMs: number) => sleep(epochMs - Date.now());

const summarize = (boundary: number, due: number, seenMs: number[]): Firing => ({
  boundary: new Date(boundary).toISOString(),
  due,
  fired: seenMs.length,
  lastMs: seenMs.length === due && due > 0 ? Math.max(...seenMs) : null,
  p50Ms: seenMs.length > 0 ? median(seenMs) : null,
});

async function lastSeq(database: ScratchDatabase): Promise<string | number> {
  const [{ seq }] = await database.query<{ seq: string | number | null }>('SELECT MAX("seq") AS "seq" FROM "Journal"');
  return seq ?? 0;
}

/** Polls the Journal (moves after `seq`, read before the minute) from `boundary` until every due instance's users have moved (or `untilMs`). */
async function watchCommits(database: ScratchDatabase, seq: string | number, boundary: number, due: Set<string>, untilMs: number): Promise<Firing> {
  const toStep = stepAfter(boundary);
  const seenMs = new Map<string, number>();
  await sleepUntil(boundary);
  while (seenMs.size < due.size && Date.now() < boundary + untilMs) {
    const moved = await database.query<{ id: string; moved: string | number }>(
      'SELECT "instanceId" AS "id", SUM("count") AS "moved" FROM "Journal" WHERE "seq" > ? AND "toStep" = ? GROUP BY "instanceId"',
      [seq, toStep],
    );
    const at = Date.now() - boundary;
    for (const row of moved) if (due.has(row.id) && Number(row.moved) >= USERS && !seenMs.has(row.id)) seenMs.set(row.id, at);
    await sleep(COMMIT_POLL_MS);
  }
  return summarize(boundary, due.size, [...seenMs.values()]);
}

/** Sweeps the counts of the due tenants from `boundary` until each shows its users moved (or `untilMs`). */
async function watchCounts(server: BenchServer, boundary: number, due: Tenant[], untilMs: number): Promise<number[]> {
  const toStep = stepAfter(boundary);
  const seenMs: number[] = [];
  await sleepUntil(boundary);
  let left = due;
  while (left.length > 0 && Date.now() < boundary + untilMs) {
    left = await sweep(left, SWEEP_CONCURRENCY, async (t) => {
      const moved = (await counts(server, t.name, t.instanceId))?.steps[toStep] === USERS;
      if (moved) seenMs.push(Date.now() - boundary);
      return moved;
    });
  }
  return seenMs;
}

async function measureLevel(
  database: ScratchDatabase,
  server: BenchServer,
  tenants: Tenant[],
  options: TenantsOptions,
  label: string,
): Promise<Omit<TenantLevel, 'setupMs' | 'setupRetries' | 'failedStarts' | 'restart'>> {
  const n = tenants.length;
  // The first even minute at least a few seconds and two sweeps away: then every instance is due (its users wait in
  // `ping`, which fires at even minutes, whenever it started). A sweep just before the minute checks that.
  const preSweep = performance.now();
  await sweep(tenants, SWEEP_CONCURRENCY, async (t) => (await counts(server, t.name, t.instanceId)) !== undefined);
  const sweepMs = performance.now() - preSweep;
  // Sweeps take longer on a loaded machine than the one measured: the one before the minute starts well ahead.
  const boundary = Math.ceil((Date.now() + 4 * sweepMs + 8_000) / (2 * MINUTE)) * 2 * MINUTE;
  await sleepUntil(boundary - 3 * sweepMs - 3_000);
  const seq = await lastSeq(database);
  const toStep = stepAfter(boundary);
  const due: Tenant[] = [];
  await sweep(tenants, SWEEP_CONCURRENCY, async (t) => {
    if ((await counts(server, t.name, t.instanceId))?.steps[otherStep(toStep)] === USERS) due.push(t);
    return true;
  });
  const late = Date.now() > boundary ? ` (that sweep ended ${Date.now() - boundary} ms after the minute)` : '';
  console.log(
    `  ${label}: ${due.length} of ${n} tenants due at ${new Date(boundary).toISOString().slice(11, 19)}${late} (a sweep of all: ${sweepMs.toFixed(0)} ms)`,
  );
  const threadsAtMinute = threadCpu(server.pid);
  const activity = watchActivity(database, server, boundary);
  const [committed, visibleMs] = await inWindow(`${label}: timers of a minute`, () =>
    Promise.all([
      watchCommits(database, seq, boundary, new Set(due.map((t) => t.instanceId)), FIRING_WATCH_MS),
      watchCounts(server, boundary, due, FIRING_WATCH_MS),
    ]),
  );
  const firingThreads = busiestThreads(server.pid, threadsAtMinute, threadCpu(server.pid));
  const firingActivity = await activity.stop();
  console.log(
    `  ${label}: while firing: ${firingThreads.map((t) => `${t.thread} ${t.cpuMs} ms`).join(', ')}${firingActivity ? `; PostgreSQL backends of the server: ${firingActivity}` : ''}`,
  );
  const visible = summarize(boundary, due.length, visibleMs);
  console.log(
    `  ${label}: fired (committed) ${committed.fired}/${due.length}, last ${committed.lastMs ?? '—'} ms; visible ${visible.fired}, last ${visible.lastMs ?? '—'} ms`,
  );

  // The idle window: from 5 s after the minute, nothing asked of the server; a full window holds the next firing.
  await sleepUntil(boundary + 5_000);
  const next = boundary + MINUTE;
  const windowEnd = Date.now() + options.windowMs;
  const idleDue = next + 10_000 < windowEnd ? new Set(due.map((t) => t.instanceId)) : undefined;
  const watching = idleDue ? watchCommits(database, await lastSeq(database), next, idleDue, windowEnd - next) : undefined;
  const backends = await backendsOf(database, server);
  const pgBefore = processesCpuMs(backends);
  const threadsBefore = threadCpu(server.pid);
  const cpuStart = processCpuMs(server.pid);
  const windowStart = performance.now();
  const perSecond: { at: number; cpuMs: number }[] = [];
  await inWindow(`${label}: idle`, async () => {
    for (let last = cpuStart; Date.now() < windowEnd; ) {
      await sleep(Math.min(1_000, windowEnd - Date.now()));
      const now = processCpuMs(server.pid);
      perSecond.push({ at: Date.now(), cpuMs: now - last });
      last = now;
    }
  });
  const windowMs = performance.now() - windowStart;
  const cpuMs = processCpuMs(server.pid) - cpuStart;
  const threads = busiestThreads(server.pid, threadsBefore, threadCpu(server.pid));
  const pgMs = cpuBetween(pgBefore, processesCpuMs(await backendsOf(database, server)));
  const firingIdle = await watching;
  // The firing's work goes on after its last commit (each moved partition then checkpoints): 5 s more are left out.
  const busyUntil = next + (firingIdle?.lastMs ?? 0) + 5_000;
  const quiet = perSecond.filter(({ at }) => at <= next - 1_000 || at >= busyUntil + 1_000);
  const rssBytes = server.rssBytes();
  const idleCpuPercent = (100 * cpuMs) / windowMs;
  console.log(
    `  ${label}: idle CPU ${idleCpuPercent.toFixed(1)}% of a core over ${(windowMs / 1000).toFixed(0)} s (${threads.map((t) => `${t.thread} ${t.cpuMs}`).join(', ')})` +
      `${database.provider === 'postgres' ? `, PostgreSQL backends ${((100 * pgMs) / windowMs).toFixed(1)}%` : ''}; RSS ${(rssBytes / 2 ** 20).toFixed(0)} MiB`,
  );

  const startToCountedMs: number[] = [];
  const busy = { retries: 0 };
  for (let k = 0; k < STARTS_PER_LEVEL; k++) {
    const probe = tenants[0];
    const definition = { name: `probe-${n}-${k}`, definition: TICK_WORKFLOW };
    const workflow = await retried(busy, () => call<{ id: string }>(server, 'POST', `/tenants/${probe.name}/workflows`, definition));
    const started = performance.now();
    const { instanceId } = await retried(busy, () =>
      call<{ instanceId: string }>(server, 'POST', `/tenants/${probe.name}/workflows/${workflow.id}/start`, { crowd: 'all' }),
    );
    while ((await counts(server, probe.name, instanceId))?.total !== USERS) {
      if (performance.now() - started > 120_000) throw new Error(`start → counted: not counted after 120 s`);
      await sleep(2);
    }
    startToCountedMs.push(performance.now() - started);
    await retried(busy, () => call(server, 'POST', `/tenants/${probe.name}/instances/${instanceId}/stop`));
  }
  console.log(
    `  ${label}: start → counted ${startToCountedMs.map((v) => v.toFixed(0)).join(', ')} ms${busy.retries ? ` (${busy.retries} requests retried after a 503)` : ''}`,
  );

  return {
    tenants: n,
    firingVisible: { ...visible, sweepMs },
    firingThreads,
    ...(firingActivity ? { firingActivity } : {}),
    firingCommitted: committed,
    ...(firingIdle ? { firingIdle } : {}),
    idleCpuPercent,
    idleCpuBetweenFiringsPercent: quiet.length > 0 ? quiet.reduce((s, q) => s + q.cpuMs, 0) / (10 * quiet.length) : idleCpuPercent,
    windowMs,
    busiestThreads: threads,
    cpuPerSecond: perSecond.map(({ at, cpuMs }) => [Math.round((at - boundary) / 1000), cpuMs]),
    ...(database.provider === 'postgres' ? { postgresCpuPercent: (100 * pgMs) / windowMs } : {}),
    rssBytes,
    startToCountedMs,
  };
}

/** SIGTERM, then a new server on the same database: spawn → listening, → first answered count, → every tenant's. */
async function restart(server: BenchServer, databaseUrl: string, tenants: Tenant[], label: string, profile?: boolean) {
  const stopping = performance.now();
  await server.stop();
  const stopMs = performance.now() - stopping;
  const spawned = performance.now();
  const first = tenants[tenants.length - 1];
  // Up once a count answers: the route is the server's own, served before Next is ready (server/main.ts).
  const next = await startServer(databaseUrl, { profile, answering: async (at) => (await counts(at, first.name, first.instanceId)) !== undefined });
  const firstCountMs = performance.now() - spawned;
  const listenMs = listenedAfterMs(next) ?? firstCountMs;
  await sweepUntilAll('restart: counts of every tenant', tenants, async (t) => (await counts(next, t.name, t.instanceId))?.total === USERS, 300_000);
  const allCountsMs = performance.now() - spawned;
  // The server's own account of its boot: its phases before it listened (server/main.ts).
  const booted = next.log().match(/listening on \S+ (.*)/)?.[1] ?? '';
  console.log(
    `  ${label}: restart: stop ${stopMs.toFixed(0)} ms; listening ${listenMs.toFixed(0)} ms, first count ${firstCountMs.toFixed(0)} ms, every tenant's ${allCountsMs.toFixed(0)} ms after spawn; the server: ${booted}`,
  );
  return { server: next, restart: { stopMs, listenMs, firstCountMs, allCountsMs } };
}

export async function measureTenants(database: ScratchDatabase, options: TenantsOptions): Promise<TenantFigures> {
  const crowd = tickCrowd();
  const figures: TenantFigures = { levels: [] };
  const tenants: Tenant[] = [];
  let server = await startServer(database.url, { profile: options.profile });
  try {
    for (const n of options.levels) {
      const label = `tenants on ${database.provider}, N=${n}`;
      try {
        const setupStarted = performance.now();
        const setupRetries = await addTenants(server, tenants, n, crowd);
        const failedStarts = await untilCounted(server, tenants);
        const setupMs = performance.now() - setupStarted;
        console.log(`  ${label}: ${n} tenants running after ${(setupMs / 1000).toFixed(1)} s of setup`);
        const level = await measureLevel(database, server, tenants, options, label);
        const restarted = await inWindow(`${label}: restart`, () => restart(server, database.url, tenants, label, options.profile));
        server = restarted.server;
        figures.levels.push({ ...level, setupMs, setupRetries, failedStarts, restart: restarted.restart });
      } catch (error) {
        figures.error = `N=${n}: ${(error as Error).message.split('\n')[0].slice(0, 300)}`;
        console.log(`  ! ${label}: ${figures.error}`);
        const problems = server
          .log()
          .split('\n')
          .filter((line) => /error|fail|warn|busy/i.test(line));
        if (problems.length) console.log(`    server log:\n    ${problems.slice(-8).join('\n    ')}`);
        break;
      }
    }
    return figures;
  } finally {
    await server.stop();
  }
}
