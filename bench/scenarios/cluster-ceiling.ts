// The cluster section's growing load (issue 39 §6): through the 3 members, event batches with more and more in flight
// until events/s stop growing, and at each level what one PostgreSQL primary did for them: its CPU, WAL bytes and
// write transactions, the bytes the event log and the journal grew by, and what the members' backends were doing
// (sampled from pg_stat_activity). The level where the rate stops growing names the saturating resource: the
// machine's cores when they are all busy (members and PostgreSQL share them here), else what the backends waited on
// most (the journal's advisory lock, WAL syncs).
import { cpus } from 'node:os';
import { readFileSync } from 'node:fs';
import type { ScratchDatabase } from '../lib/database';
import { postgresCpuMs } from '../lib/proc';
import type { BenchServer } from '../lib/server';

export const CEILING_IN_FLIGHT = [1, 2, 4, 8, 16];
/** A level whose rate grew less than this over the one before it is where the load saturated. */
const GROWTH = 1.1;

export interface CeilingLevel {
  inFlight: number;
  eventsPerSecond: number;
  /** CPU used per second of the level, in cores: the members added up, PostgreSQL's processes, the whole machine. */
  membersCores: number;
  postgresCores: number | null;
  machineCores: number;
  walBytesPerSecond: number;
  /** Transactions that wrote (took a transaction id), every database's. */
  writesPerSecond: number;
  logBytesPerSecond: number;
  journalBytesPerSecond: number;
  /** The members' PostgreSQL backends per sample, by what they were doing ('CPU': active, not waiting), busiest first. */
  backends: { what: string; average: number }[];
}

export interface CeilingFigures {
  levels: CeilingLevel[];
  /** The first level that grew less than 10% over the one before (the last level when every one grew). */
  saturatedAt: number;
  saturating: string;
}

/** Busy and total CPU ticks of the whole machine (/proc/stat), iowait counted as idle. */
function machineTicks(): { busy: number; total: number } {
  const [, ...fields] = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/);
  const ticks = fields.map(Number);
  const total = ticks.reduce((sum, n) => sum + n, 0);
  return { busy: total - ticks[3] - ticks[4], total };
}

/**
 * PostgreSQL's exact counters: the WAL position, the next transaction id (so: write transactions, cluster-wide), the
 * event log's and the journal's sizes. (pg_stat_wal and pg_stat_database lag: a backend flushes its counts at most
 * once a second, and an idle one up to 10 s later.)
 */
export type Counters = { wal: bigint; writes: number; log: number; journal: number };

export async function counters(database: ScratchDatabase): Promise<Counters> {
  const [row] = await database.query<{ wal: string; writes: string; log: string; journal: string }>(
    `SELECT pg_current_wal_lsn() - '0/0' AS "wal", pg_snapshot_xmax(pg_current_snapshot())::text AS "writes",
       pg_total_relation_size('"EventLog"') AS "log", pg_total_relation_size('"Journal"') AS "journal"`,
  );
  return { wal: BigInt(row.wal), writes: Number(row.writes), log: Number(row.log), journal: Number(row.journal) };
}

/** Samples what the members' backends do (by the pid in their application_name) until stopped. */
function sampleBackends(database: ScratchDatabase, memberPids: number[]) {
  const seen = new Map<string, number>();
  let samples = 0;
  let running = true;
  const pids = memberPids.map((pid) => `'${pid}'`).join(', ');
  const sampling = (async () => {
    while (running) {
      const rows = await database.query<{ what: string; n: string }>(
        `SELECT coalesce("wait_event_type" || ':' || "wait_event", 'CPU') AS "what", count(*) AS "n" FROM pg_stat_activity
          WHERE "state" = 'active' AND split_part("application_name", ' ', 2) IN (${pids}) GROUP BY 1`,
      );
      samples++;
      for (const { what, n } of rows) seen.set(what, (seen.get(what) ?? 0) + Number(n));
      await new Promise((r) => setTimeout(r, 25));
    }
  })();
  return async () => {
    running = false;
    await sampling;
    return [...seen]
      .map(([what, n]) => ({ what, average: Math.round((100 * n) / Math.max(samples, 1)) / 100 }))
      .sort((a, b) => b.average - a.average)
      .slice(0, 4);
  };
}

/**
 * Sends `eventsPerLevel` purchases of fresh users (from `firstUser` on) at each in-flight level, spread over the
 * members; `post` sends one batch, `applied` waits until `bought` users are counted as bought.
 */
export async function measureCeiling(
  database: ScratchDatabase,
  members: BenchServer[],
  options: {
    firstUser: number;
    eventsPerLevel: number;
    batch: number;
    post: (member: number, events: { user: number; type: string }[]) => Promise<void>;
    applied: (count: number) => Promise<void>;
  },
): Promise<CeilingFigures> {
  const levels: CeilingLevel[] = [];
  let user = options.firstUser;
  for (const inFlight of CEILING_IN_FLIGHT) {
    const batches: { user: number; type: string }[][] = [];
    for (let at = 0; at < options.eventsPerLevel; at += options.batch)
      batches.push(Array.from({ length: Math.min(options.batch, options.eventsPerLevel - at) }, (_, i) => ({ user: user + at + i, type: 'purchase' })));
    user += options.eventsPerLevel;
    const membersBefore = members.map((m) => m.cpuMs());
    const pgBefore = postgresCpuMs();
    const machineBefore = machineTicks();
    const before = await counters(database);
    const stopSampling = sampleBackends(
      database,
      members.map((m) => m.pid),
    );
    const started = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: inFlight }, async () => {
        for (let b = next++; b < batches.length; b = next++) await options.post(b % members.length, batches[b]);
      }),
    );
    await options.applied(user - options.firstUser);
    const seconds = (performance.now() - started) / 1000;
    const machineAfter = machineTicks();
    const pgAfter = postgresCpuMs();
    const membersMs = members.reduce((sum, m, i) => sum + m.cpuMs() - membersBefore[i], 0);
    const backends = await stopSampling();
    const after = await counters(database);
    const perSecond = (n: number) => Math.round(n / seconds);
    const level: CeilingLevel = {
      inFlight,
      eventsPerSecond: perSecond(options.eventsPerLevel),
      membersCores: round2(membersMs / 1000 / seconds),
      postgresCores: pgBefore === undefined || pgAfter === undefined ? null : round2((pgAfter - pgBefore) / 1000 / seconds),
      machineCores: round2((cpus().length * (machineAfter.busy - machineBefore.busy)) / Math.max(machineAfter.total - machineBefore.total, 1)),
      walBytesPerSecond: perSecond(Number(after.wal - before.wal)),
      writesPerSecond: perSecond(after.writes - before.writes),
      logBytesPerSecond: perSecond(after.log - before.log),
      journalBytesPerSecond: perSecond(after.journal - before.journal),
      backends,
    };
    levels.push(level);
    console.log(`  ceiling, ${inFlight} in flight: ${describeLevel(level)}`);
  }
  const grewLess = levels.findIndex((level, i) => i > 0 && level.eventsPerSecond < GROWTH * levels[i - 1].eventsPerSecond);
  const saturated = levels[grewLess < 0 ? levels.length - 1 : grewLess];
  const figures = { levels, saturatedAt: saturated.inFlight, saturating: saturatingResource(saturated) };
  console.log(`  ceiling: events/s stopped growing at ${figures.saturatedAt} in flight; saturating: ${figures.saturating}`);
  return figures;
}

const round2 = (n: number) => Math.round(100 * n) / 100;

export function describeLevel(level: CeilingLevel): string {
  const kb = (bytes: number) => `${Math.round(bytes / 1024).toLocaleString('en-US')} KB/s`;
  return (
    `${level.eventsPerSecond.toLocaleString('en-US')} events/s; cores busy: members ${level.membersCores}, PostgreSQL ${level.postgresCores ?? 'n/a'}, ` +
    `machine ${level.machineCores} of ${cpus().length}; WAL ${kb(level.walBytesPerSecond)}, ${level.writesPerSecond} write transactions/s; ` +
    ` log ${kb(level.logBytesPerSecond)}, journal ${kb(level.journalBytesPerSecond)}; backends per sample: ` +
    `${level.backends.map((b) => `${b.average} ${b.what}`).join(', ') || 'none active'}`
  );
}

/** The machine's cores when ≥ 90% of them were busy; else what the members' backends were doing most. */
function saturatingResource(level: CeilingLevel): string {
  const machine = cpus().length;
  if (level.machineCores >= 0.9 * machine)
    return `the machine's ${machine} cores (members ${level.membersCores}, PostgreSQL ${level.postgresCores ?? 'n/a'} of ${level.machineCores} busy)`;
  const top = level.backends[0];
  return top ? `PostgreSQL backends: ${top.what} (${top.average} per sample)` : 'none found (nothing busy)';
}
