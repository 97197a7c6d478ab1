// On SIGTERM/SIGINT the server first hands back what it holds (procedure and partition leases, after a last
// checkpoint), then lets the server entry (server/main.ts) close the HTTP server and exit. Without this the process exits
// holding its leases, and the next server (a restart, a deploy) waits for them to expire before it runs anything.
import { app } from './app';

const closers = () => app().state.shutdown.closers;

/**
 * Long-lived responses (event streams) register how to end themselves: Next.js waits for every open connection
 * before it exits, so a studio tab left open would otherwise keep a stopping server alive. Returns the unregister.
 */
export function onShutdown(close: () => void): () => void {
  closers().add(close);
  return () => closers().delete(close);
}

/** The background work gets this long to stop; then the process exits regardless. */
const STOP_DEADLINE_MS = 10_000;
const EXIT_CODES = { SIGINT: 130, SIGTERM: 143 } as const;

export function stopOnSignals(stopWork: () => Promise<void>): void {
  const state = app().state.shutdown;
  if (state.installed) return;
  state.installed = true;
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    // The server entry's handler (close the server, then exit) runs after ours instead of racing it.
    const next = process.listeners(signal);
    process.removeAllListeners(signal);
    process.once(signal, () => {
      for (const close of [...closers()]) close();
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
