// The counts event stream (`GET …/instances/{iid}/counts/stream`) as a test reads it: a real server's response, so a
// read waits for the server, up to a deadline.
import type { Counts } from '../../server/engine/types';
import { withinMs } from './wait-for';

/** Reads `event: counts` messages of an SSE response as they arrive. */
export function countsEvents(response: Response) {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  return {
    async next(timeoutMs: number): Promise<CountsMessage | null> {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const end = buffer.indexOf('\n\n');
        if (end >= 0) {
          const message = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = /^event: counts\ndata: (.*)$/m.exec(message);
          if (data) return JSON.parse(data[1]);
          continue; // a heartbeat comment
        }
        const left = deadline - Date.now();
        if (left <= 0) return null;
        const chunk = await withinMs(reader.read(), left);
        if (!chunk || chunk.done) return null;
        buffer += decoder.decode(chunk.value, { stream: true });
      }
    },
    cancel: () => reader.cancel(),
  };
}

/** A counts message: the counts the API answers (server/http/counts-route.ts `countsBody`). */
export type CountsMessage = Counts;

/** The first counts message of `response` that `done` accepts, or null when none came within `timeoutMs`. */
export async function countsMessageWhere(response: Response, done: (counts: CountsMessage) => boolean, timeoutMs = 10_000): Promise<CountsMessage | null> {
  const events = countsEvents(response);
  const deadline = Date.now() + timeoutMs;
  try {
    for (;;) {
      const counts = await events.next(deadline - Date.now());
      if (counts === null || done(counts)) return counts;
    }
  } finally {
    await events.cancel();
  }
}
