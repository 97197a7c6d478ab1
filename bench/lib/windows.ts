// Time windows of the measured work, on the monotonic clock V8's CPU profiles use, so `--profile` can show what
// the server (or this process) spent its time on during each scenario, not over its whole life.
import { Session } from 'node:inspector/promises';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { TMP_DIR } from './database';

export interface Window {
  label: string;
  fromUs: number;
  toUs: number;
}

export const windows: Window[] = [];

const nowUs = () => Number(process.hrtime.bigint() / 1000n);

/** Runs `work` and records its window under `label`. */
export async function inWindow<T>(label: string, work: () => Promise<T>): Promise<T> {
  const fromUs = nowUs();
  try {
    return await work();
  } finally {
    windows.push({ label, fromUs, toUs: nowUs() });
  }
}

/** Profiles this process while `work` runs (for in-process scenarios), writing a .cpuprofile under bench/tmp/profiles. */
export async function profiled<T>(enabled: boolean, label: string, work: () => Promise<T>): Promise<T> {
  if (!enabled) return inWindow(label, work);
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  try {
    return await inWindow(label, work);
  } finally {
    const { profile } = await session.post('Profiler.stop');
    session.disconnect();
    mkdirSync(join(TMP_DIR, 'profiles'), { recursive: true });
    writeFileSync(join(TMP_DIR, 'profiles', `bench-${label.replace(/\W+/g, '-')}.cpuprofile`), JSON.stringify(profile));
  }
}
