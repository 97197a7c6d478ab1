// The cluster's own connections (the channel's LISTEN, the membership lock) come back by themselves when PostgreSQL
// drops them: a member that gave up after one failed attempt would stay deaf, or out of the cluster, for good.

const RECONNECT_AFTER_MS = 1_000;

/** Runs `attempt` after a pause, and again after each failure, until it works or `isClosed()` says its owner left. */
export function reconnectUntilClosed(attempt: () => Promise<void>, isClosed: () => boolean, label: string): void {
  setTimeout(() => {
    if (isClosed()) return;
    attempt().catch((error: Error) => {
      console.warn(`[crowdflow] ${label} could not reconnect:`, error.message);
      reconnectUntilClosed(attempt, isClosed, label);
    });
  }, RECONNECT_AFTER_MS).unref();
}
