// The one wait of tests that watch what another thread or process does on its own schedule (a real server in API, e2e
// and cluster tests; the engine thread, a child process, PostgreSQL or a runner polling real time in unit tests), whose
// clock they cannot move: asks again until the answer is the one expected, then returns it. Where a loop runs on an
// injected clock, tests move a ManualClock and await the loop instead (server/clock.ts). Inside a test body an assertion may use expect.poll instead; this also works in hooks,
// where expect.poll is not allowed, and when the value is needed afterwards.

export type WaitOptions = {
  /** How long to keep asking before giving up. */
  timeoutMs?: number;
  /** The pause between two questions. */
  everyMs?: number;
};

/**
 * Calls `read` until `done` accepts its answer (by default: a truthy one) and returns that answer; after `timeoutMs`
 * throws an error naming `what` and the last answer.
 */
export async function waitFor<T>(
  what: string,
  read: () => T | Promise<T>,
  done: (value: T) => boolean = Boolean,
  { timeoutMs = 30_000, everyMs = 50 }: WaitOptions = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}: still ${describe(value)}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/**
 * What `work` resolves to, or null when a real process did not answer within `ms` (a read of a server's stream, which
 * cannot be asked again like `waitFor`'s reads). The timer is cleared as soon as `work` settles.
 */
export async function withinMs<T>(work: Promise<T>, ms: number): Promise<T | null> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([work, new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

function describe(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 500 ? `${text.slice(0, 500)}…` : text;
}
