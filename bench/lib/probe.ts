// Latency probes on a thread of their own: this process's own work (building a million events, downloading a big
// export, its garbage collections) must not show up as server latency. A probe runs lanes; each lane sends its
// requests together, waits for all of their answers, and starts its next round `intervalMs` after the last one began
// (at once when that moment has passed; 0: back to back). Two requests in one lane are sent at the same moments, so a
// control server probed beside the server under test sees the same machine. Sample times are absolute
// (timeOrigin + now), since each thread has its own performance clock.
import { Worker } from 'node:worker_threads';
import { median, percentile } from './report';

export interface ProbeRequest {
  /** Names the request's samples. */
  name: string;
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
}

export interface ProbeLane {
  requests: ProbeRequest[];
  intervalMs: number;
}

export interface ProbeSample {
  /** When the request was sent (absolute ms, comparable across threads: see `now`). */
  at: number;
  ms: number;
  status: number;
}

/** Plain CommonJS evaluated in the worker: one kept-alive connection per request, read to the end of each answer. */
const PROBE_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const http = require('node:http');
const samples = {};
let running = true;
const now = () => performance.timeOrigin + performance.now();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
function sender(request) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  samples[request.name] = [];
  return () => new Promise((resolve, reject) => {
    const at = now();
    const outgoing = http.request(request.url, { method: request.method || 'GET', agent, headers: request.headers || {} }, (response) => {
      response.resume();
      response.on('end', () => {
        samples[request.name].push({ at, ms: now() - at, status: response.statusCode });
        resolve();
      });
    });
    outgoing.on('error', reject);
    outgoing.end(request.body);
  });
}
async function lane({ requests, intervalMs }) {
  const senders = requests.map(sender);
  let next = now();
  while (running) {
    await Promise.all(senders.map((send) => send()));
    next = Math.max(next + intervalMs, now());
    await sleep(next - now());
  }
}
parentPort.on('message', () => (running = false));
Promise.all(workerData.lanes.map(lane)).then(
  () => parentPort.postMessage(samples),
  (error) => parentPort.postMessage({ error: String(error) }),
);
`;

/** Absolute time, comparable with the probe thread's sample times. */
export const now = (): number => performance.timeOrigin + performance.now();

/** Starts the lanes; `stop` ends them after their current round and returns every sample by request name. */
export function startProbe(lanes: ProbeLane[]): { stop(): Promise<Record<string, ProbeSample[]>> } {
  const worker = new Worker(PROBE_SOURCE, { eval: true, workerData: { lanes } });
  const result = new Promise<Record<string, ProbeSample[]>>((resolve, reject) => {
    worker.once('message', (message: Record<string, ProbeSample[]> | { error: string }) =>
      'error' in message && typeof message.error === 'string'
        ? reject(new Error(`probe: ${message.error}`))
        : resolve(message as Record<string, ProbeSample[]>),
    );
    worker.once('error', reject);
  });
  result.catch(() => undefined); // reported by stop()
  return {
    async stop() {
      worker.postMessage('stop');
      const samples = await result;
      await worker.terminate();
      return samples;
    },
  };
}

export interface Window {
  from: number;
  to: number;
}

export interface WindowStats {
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  samples: number;
  /** Answers whose status was not 2xx. */
  failures: number;
}

/** Latency of the samples sent inside `window` (undefined when none was). */
export function windowStats(samples: ProbeSample[], window: Window): WindowStats | undefined {
  const inside = samples.filter((s) => s.at >= window.from && s.at <= window.to);
  if (inside.length === 0) return undefined;
  const ms = inside.map((s) => s.ms);
  return {
    p50Ms: median(ms),
    p99Ms: percentile(ms, 99),
    maxMs: Math.max(...ms),
    samples: inside.length,
    failures: inside.filter((s) => s.status < 200 || s.status > 299).length,
  };
}
