// On SIGTERM/SIGINT the server first hands back what it holds (procedure and partition leases, after a last
// checkpoint), then lets the server entry (server/main.ts) close the HTTP server and exit. Without this the process exits
// holding its leases, and the next server (a restart, a deploy) waits for them to expire before it runs anything.
// Long-lived responses (event streams) register how to end themselves in the app's `state.shutdown.closers`
// (server/http/request-context.ts `onShutdown`), and are closed first.
import type { AppState } from './app';

/** The background work gets this long to stop; then the process exits regardless. */
const STOP_DEADLINE_MS = 10_000;
const EXIT_CODES = { SIGINT: 130, SIGTERM: 143 } as const;

export function stopOnSignals(state: AppState['shutdown'], stopWork: () => Promise<void>): void {
  if (state.installed) return;
  state.installed = true;
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    // The server entry's handler (close the server, then exit) runs after ours instead of racing it.
    const next = process.listeners(signal);
    process.removeAllListeners(signal);
    process.once(signal, () => {
      for (const close of [...state.closers]) close();
      void stopWithin(stopWork, STOP_DEADLINE_MS).then(() => {
        if (next.length === 0) process.exit(EXIT_CODES[signal]);
        for (const listener of next) (listener as NodeJS.SignalsListener)(signal);
      });
    });
  }
}

async function stopWithin(stopWork: () => Promise<void>, deadlineMs: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<void>((resolve) => (timer = setTimeout(resolve, deadlineMs)));
  try {
    await Promise.race([stopWork().catch((error: unknown) => console.error('[crowdflow] stopping background work failed', error)), deadline]);
  } finally {
    clearTimeout(timer);
  }
}
