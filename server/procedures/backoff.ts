// Retry delays: exponential from 500 ms, factor 2, capped at 60 s, plus random jitter in [0, delay/4].
const BACKOFF_BASE_MS = 500;
const BACKOFF_FACTOR = 2;
const BACKOFF_CAP_MS = 60_000;

/** Delay before retry number `attempt` (1-based). `random` is injectable so tests can pin the jitter. */
export function backoffDelay(attempt: number, random: () => number = Math.random): number {
  const delay = Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * BACKOFF_FACTOR ** Math.max(0, attempt - 1));
  return Math.round(delay + random() * (delay / 4));
}
