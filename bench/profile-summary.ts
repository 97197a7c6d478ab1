// Prints the functions with the most self time in V8 CPU profiles: `npx tsx bench/profile-summary.ts [files…]
// [--top=25]` (default: every profile under bench/tmp/profiles). `npm run bench -- --profile` writes the profiles
// (the server's, and this process's around in-process scenarios) and prints a summary per scenario window.
import { readdirSync, readFileSync } from 'node:fs';
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

/**
 * Self time per function (ms, with its share) over the samples inside `window` (all samples without one), then
 * the functions of our code with the most total (inclusive) time: where in our code the time was spent.
 */
export function topFunctions(profile: Profile, top: number, window?: Window): string[] {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
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

/** For each window, the profile that covers it (the server's or this process's) and its top functions. */
export function summarizeWindows(dir: string, windows: Window[], top = 12): string {
  const profiles = readProfiles(dir);
  const out: string[] = [];
  for (const window of windows) {
    const covering = profiles.filter(({ profile }) => profile.startTime < window.toUs && profile.endTime > window.fromUs);
    for (const { file, profile } of covering) {
      out.push(`\n${window.label} — ${relative(process.cwd(), file)}`);
      out.push(...topFunctions(profile, top, window).map((line) => `  ${line}`));
    }
  }
  return out.join('\n');
}

if (process.argv[1]?.endsWith('profile-summary.ts')) {
  const args = process.argv.slice(2);
  const top = Number(args.find((a) => a.startsWith('--top='))?.split('=')[1] ?? 25);
  const files = args.filter((a) => !a.startsWith('--'));
  const dir = join(process.cwd(), 'bench/tmp/profiles');
  const chosen = files.length ? files.map((file) => ({ file, profile: JSON.parse(readFileSync(file, 'utf8')) as Profile })) : readProfiles(dir);
  for (const { file, profile } of chosen) console.log(`\n${relative(process.cwd(), file)}\n${topFunctions(profile, top).join('\n')}`);
}
