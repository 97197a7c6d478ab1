// Prints the functions with the most self time in V8 CPU profiles: `npx tsx bench/profile-summary.ts [files…]
// [--top=25]` (default: every profile under bench/tmp/profiles). `npm run bench -- --profile` writes the profiles
// (the server's, and this process's around in-process scenarios) and prints a summary per scenario window, with each
// thread's longest tasks (what held up everything queued behind them); run without files after such a run, it
// prints that summary again from the windows the run left beside the profiles.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { Window } from './lib/windows';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
export interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** The scenario windows of the run, beside its profiles (bench/run.ts writes them). */
export const WINDOWS_FILE = 'windows.json';

export function readProfiles(dir: string): { file: string; profile: Profile }[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.cpuprofile'))
    .map((f) => ({ file: join(dir, f), profile: JSON.parse(readFileSync(join(dir, f), 'utf8')) as Profile }));
}

function frameKey(node: ProfileNode): string {
  const frame = node.callFrame;
  const file = frame.url ? relative(process.cwd(), frame.url.replace(/^file:\/\//, '')) : '';
  return `${frame.functionName || '(anonymous)'}${file ? ` ${file}` : ''}`;
}

/** Our code (server/, app/, bench/ sources or the built server chunks), not node internals or node_modules. */
function isOurs(node: ProfileNode): boolean {
  const { url, functionName } = node.callFrame;
  // Minified one- or two-letter names and the bundler's module runtime say nothing about where in our code.
  return functionName.length > 2 && /\/(server|app|bench)\//.test(url) && !/node_modules|turbopack\]_runtime|root-of-the-server/.test(url);
}

/** The profile's nodes by id, and each node's parent. */
function nodesOf(profile: Profile): { byId: Map<number, ProfileNode>; parent: Map<number, number> } {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  return { byId, parent };
}

/**
 * Self time per function (ms, with its share) over the samples inside `window` (all samples without one), then
 * the functions of our code with the most total (inclusive) time: where in our code the time was spent.
 */
export function topFunctions(profile: Profile, top: number, window?: Window): string[] {
  const { byId, parent } = nodesOf(profile);
  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  let at = profile.startTime;
  let total = 0;
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0;
    at += delta;
    if (window && (at < window.fromUs || at > window.toUs)) return;
    const key = frameKey(byId.get(id)!);
    self.set(key, (self.get(key) ?? 0) + delta);
    total += delta;
    const seen = new Set<string>();
    for (let node: number | undefined = id; node !== undefined; node = parent.get(node)) {
      const frame = byId.get(node)!;
      if (!isOurs(frame)) continue;
      const ours = frameKey(frame);
      if (seen.has(ours)) continue;
      seen.add(ours);
      inclusive.set(ours, (inclusive.get(ours) ?? 0) + delta);
    }
  });
  const busy = total - (self.get('(idle)') ?? 0);
  const line = ([key, micros]: [string, number]) =>
    `${((100 * micros) / Math.max(total, 1)).toFixed(1).padStart(5)}%  ${(micros / 1000).toFixed(0).padStart(6)} ms  ${key}`;
  return [
    `${(total / 1000).toFixed(0)} ms sampled, ${(busy / 1000).toFixed(0)} ms busy; self time:`,
    ...[...self]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(line),
    'total time in our code:',
    ...[...inclusive]
      .sort((a, b) => b[1] - a[1])
      .slice(0, Math.ceil(top / 2))
      .map(line),
  ];
}

/** A thread busy without a break at least this long holds up whatever else waits for it (issue 34's slice is 10 ms). */
const BLOCK_MS = 15;

/**
 * The thread's tasks (runs of samples with no `(idle)` and no other entry between them) of BLOCK_MS or more inside
 * `window`: what held everything else on that thread up. Each names the innermost functions of our code under which
 * most of it ran, and its top self-time functions.
 */
export function longTasks(profile: Profile, window?: Window, top = 8): string[] {
  const { byId, parent } = nodesOf(profile);
  const stretches: { fromUs: number; us: number; line: string }[] = [];
  let samples: { id: number; delta: number }[] = [];
  let fromUs = 0;
  const close = () => {
    const us = samples.reduce((sum, sample) => sum + sample.delta, 0);
    if (us >= BLOCK_MS * 1000) stretches.push({ fromUs, us, line: describeStretch(samples, us, byId, parent) });
    samples = [];
  };
  // The frame under the root is the task's entry (processImmediate, processTimers, a port's message, a socket's read):
  // where it changes, the event loop got a turn in between, so a stretch is one entry's run. GC and native work
  // show as their own roots inside any task, and do not end it.
  const within = new Set(['(garbage collector)', '(program)']);
  const rootId = profile.nodes[0].id;
  const entryOf = (id: number) => {
    let node = id;
    while (parent.get(node) !== undefined && parent.get(node) !== rootId) node = parent.get(node)!;
    return node;
  };
  let entry: number | undefined;
  let at = profile.startTime;
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0;
    at += delta;
    if (window && (at < window.fromUs || at > window.toUs)) return;
    const name = byId.get(id)!.callFrame.functionName;
    if (name === '(idle)') return close();
    if (within.has(name)) {
      if (samples.length > 0) samples.push({ id, delta });
      return;
    }
    const task = entryOf(id);
    if (task !== entry) close();
    entry = task;
    if (samples.length === 0) fromUs = at;
    samples.push({ id, delta });
  });
  close();
  const origin = window?.fromUs ?? profile.startTime;
  const longest = stretches.sort((a, b) => b.us - a.us).slice(0, top);
  return [
    `${stretches.length} tasks of ≥ ${BLOCK_MS} ms${stretches.length > top ? `, the ${top} longest` : ''}:`,
    ...longest.map(({ fromUs, us, line }) => `${(us / 1000).toFixed(0).padStart(6)} ms at +${((fromUs - origin) / 1e6).toFixed(2)} s  ${line}`),
  ];
}

function describeStretch(samples: { id: number; delta: number }[], us: number, byId: Map<number, ProfileNode>, parent: Map<number, number>): string {
  const under = new Map<string, { us: number; depth: number }>();
  const self = new Map<string, number>();
  for (const { id, delta } of samples) {
    const key = frameKey(byId.get(id)!);
    self.set(key, (self.get(key) ?? 0) + delta);
    const chain: ProfileNode[] = [];
    for (let node: number | undefined = id; node !== undefined; node = parent.get(node)) chain.push(byId.get(node)!);
    const seen = new Set<string>();
    chain.reverse().forEach((frame, depth) => {
      if (!isOurs(frame)) return;
      const ours = frameKey(frame);
      if (seen.has(ours)) return;
      seen.add(ours);
      const entry = under.get(ours) ?? { us: 0, depth };
      entry.us += delta;
      entry.depth = Math.max(entry.depth, depth);
      under.set(ours, entry);
    });
  }
  const share = (part: number) => `${Math.round((100 * part) / us)}%`;
  const ours = [...under]
    .filter(([, entry]) => entry.us >= 0.3 * us)
    .sort((a, b) => b[1].depth - a[1].depth)
    .slice(0, 3)
    .map(([key, entry]) => `${key} ${share(entry.us)}`);
  const selfs = [...self]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 3)
    .map(([key, part]) => `${key} ${share(part)}`);
  return `under ${ours.length ? ours.join(' < ') : '(no function of ours)'}; self: ${selfs.join(', ')}`;
}

/** For each window, the profile that covers it (the server's or this process's), its top functions and its blocks. */
export function summarizeWindows(dir: string, windows: Window[], top = 12): string {
  const profiles = readProfiles(dir);
  const out: string[] = [];
  for (const window of windows) {
    const covering = profiles.filter(({ profile }) => profile.startTime < window.toUs && profile.endTime > window.fromUs);
    for (const { file, profile } of covering) {
      out.push(`\n${window.label} — ${relative(process.cwd(), file)}`);
      out.push(...topFunctions(profile, top, window).map((line) => `  ${line}`));
      out.push(...longTasks(profile, window).map((line) => `  ${line}`));
    }
  }
  return out.join('\n');
}

if (process.argv[1]?.endsWith('profile-summary.ts')) {
  const args = process.argv.slice(2);
  const top = Number(args.find((a) => a.startsWith('--top='))?.split('=')[1] ?? 25);
  const files = args.filter((a) => !a.startsWith('--'));
  const dir = join(process.cwd(), 'bench/tmp/profiles');
  const windowsFile = join(dir, WINDOWS_FILE);
  if (files.length === 0 && existsSync(windowsFile)) {
    // The windows of the run that wrote these profiles: the summary it printed, again (after a change to this file).
    console.log(summarizeWindows(dir, JSON.parse(readFileSync(windowsFile, 'utf8')) as Window[], top));
  } else {
    const chosen = files.length ? files.map((file) => ({ file, profile: JSON.parse(readFileSync(file, 'utf8')) as Profile })) : readProfiles(dir);
    for (const { file, profile } of chosen)
      console.log(`\n${relative(process.cwd(), file)}\n${[...topFunctions(profile, top), ...longTasks(profile)].join('\n')}`);
  }
}
