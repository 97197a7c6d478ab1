// CPU time from /proc, a figure the machine's load cannot inflate: a server's threads (which thread was busy), and
// the PostgreSQL backends serving its connections (work the server makes PostgreSQL do is not in its own figure).
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/** USER_HZ is 100 on Linux: utime and stime count 10 ms ticks. */
const TICK_MS = 10;

/** Name and CPU time (user + system, ms) from a /proc stat file; undefined when the process or thread is gone. */
function readStat(path: string): { name: string; cpuMs: number } | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
  // The name is parenthesized and may hold spaces or parentheses: fields are counted after the last ')'.
  const close = text.lastIndexOf(')');
  const fields = text.slice(close + 2).split(' ');
  return { name: text.slice(text.indexOf('(') + 1, close), cpuMs: (Number(fields[11]) + Number(fields[12])) * TICK_MS };
}

/** CPU time of each thread of `pid`, by thread id. */
export function threadCpu(pid: number): Map<number, { name: string; cpuMs: number }> {
  const threads = new Map<number, { name: string; cpuMs: number }>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    const stat = readStat(`/proc/${pid}/task/${tid}/stat`);
    if (stat) threads.set(Number(tid), stat);
  }
  return threads;
}

/**
 * What each thread of `pid` used between two `threadCpu` readings, busiest first. Node names its threads alike: the
 * main thread (the one whose id is the pid) is called `main`, the others by name and id.
 */
export function busiestThreads(
  pid: number,
  before: Map<number, { name: string; cpuMs: number }>,
  after: Map<number, { name: string; cpuMs: number }>,
  top = 4,
): { thread: string; cpuMs: number }[] {
  return [...after]
    .map(([tid, { name, cpuMs }]) => ({ thread: tid === pid ? 'main' : `${name} ${tid}`, cpuMs: cpuMs - (before.get(tid)?.cpuMs ?? 0) }))
    .sort((a, b) => b.cpuMs - a.cpuMs)
    .slice(0, top);
}

export function processCpuMs(pid: number): number {
  return readStat(`/proc/${pid}/stat`)?.cpuMs ?? 0;
}

/**
 * Local ports of `pid`'s TCP connections to `remotePort`: its socket inodes (/proc/<pid>/fd) looked up in its
 * network namespace's connection tables (/proc/<pid>/net/tcp, tcp6).
 */
export function connectionPorts(pid: number, remotePort: number): number[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const target = readlinkSync(`/proc/${pid}/fd/${fd}`);
      if (target.startsWith('socket:[')) inodes.add(target.slice(8, -1));
    } catch {
      // closed meanwhile
    }
  }
  const ports: number[] = [];
  for (const table of ['tcp', 'tcp6']) {
    for (const line of readFileSync(`/proc/${pid}/net/${table}`, 'utf8').split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields.length < 10 || !inodes.has(fields[9])) continue;
      const port = (address: string) => Number.parseInt(address.split(':')[1], 16);
      if (port(fields[2]) === remotePort) ports.push(port(fields[1]));
    }
  }
  return ports;
}

/** CPU time of processes (PostgreSQL backends) by pid; one that has ended is left out. */
export function processesCpuMs(pids: number[]): Map<number, number> {
  const cpu = new Map<number, number>();
  for (const pid of pids) {
    const stat = readStat(`/proc/${pid}/stat`);
    if (stat) cpu.set(pid, stat.cpuMs);
  }
  return cpu;
}

/**
 * CPU the processes used between two readings: those present at both ends, and those new at the end (from 0, as
 * backends the pool opened meanwhile). One that ended meanwhile is not counted (its /proc entry is gone).
 */
export function cpuBetween(before: Map<number, number>, after: Map<number, number>): number {
  let ms = 0;
  for (const [pid, cpuMs] of after) ms += cpuMs - (before.get(pid) ?? 0);
  return ms;
}

/**
 * CPU time (ms) of the local PostgreSQL server so far: every process named `postgres` (backends, WAL writer,
 * checkpointer, autovacuum…) plus the postmaster's reaped children (cutime + cstime), so backends that ended between
 * two readings, as pooled connections closed after idling, still count. Undefined when no PostgreSQL runs on this
 * machine (a remote database's CPU is not ours to read).
 */
export function postgresCpuMs(): number | undefined {
  const stats = new Map<number, { ppid: number; cpuMs: number; reapedMs: number }>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let text: string;
    try {
      text = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // ended meanwhile
    }
    const close = text.lastIndexOf(')');
    if (text.slice(text.indexOf('(') + 1, close) !== 'postgres') continue;
    const fields = text.slice(close + 2).split(' ');
    const ticks = (at: number) => Number(fields[at]) * TICK_MS;
    stats.set(Number(entry), { ppid: Number(fields[1]), cpuMs: ticks(11) + ticks(12), reapedMs: ticks(13) + ticks(14) });
  }
  if (stats.size === 0) return undefined;
  let ms = 0;
  for (const { ppid, cpuMs, reapedMs } of stats.values()) ms += cpuMs + (stats.has(ppid) ? 0 : reapedMs);
  return ms;
}
