// A minimal Server-Sent Events reader for the counts stream: calls `onCounts` with each `counts` event's JSON.
import { BENCH_ADMIN_TOKEN, type BenchServer } from './server';

export interface CountsJson {
  instanceId: string;
  total: number;
  steps: Record<string, number>;
  edges: Record<string, number>;
}

export async function subscribeCounts(server: BenchServer, path: string, onCounts: (counts: CountsJson, receivedAt: number) => void): Promise<() => void> {
  const abort = new AbortController();
  const response = await fetch(`${server.baseUrl}/api/v1${path}`, { headers: { authorization: `Bearer ${BENCH_ADMIN_TOKEN}` }, signal: abort.signal });
  if (!response.ok) throw new Error(`GET ${path} → ${response.status} ${await response.text()}`);
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  void (async () => {
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        const receivedAt = performance.now();
        buffer += value;
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const message = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const lines = message.split('\n');
          if (!lines.includes('event: counts')) continue;
          const data = lines
            .filter((line) => line.startsWith('data: '))
            .map((line) => line.slice(6))
            .join('\n');
          onCounts(JSON.parse(data) as CountsJson, receivedAt);
        }
      }
    } catch {
      // aborted by the caller
    }
  })();
  return () => abort.abort();
}
