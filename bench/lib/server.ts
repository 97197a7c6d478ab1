// A real server (server/main.ts over the last `next build`) on a scratch database, like test/setup/server.ts,
// and a small JSON client for it.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, serverArguments, waitUntilUp } from '../../test/helpers/next-server';
import { undoOnInterrupt } from './cleanup';
import { TMP_DIR } from './database';

export const BENCH_ADMIN_TOKEN = 'bench-admin-token-0123456789abcdef';

export interface BenchServer {
  baseUrl: string;
  pid: number;
  /** Milliseconds from spawn until the server answered its first request. */
  bootMs: number;
  /** Resident memory of the server process (bytes), from /proc. */
  rssBytes(): number;
  /** CPU time the server process has used so far (user + system, ms), from /proc: a figure the machine's load cannot inflate. */
  cpuMs(): number;
  log(): string;
  stop(): Promise<void>;
  /** SIGKILL: a crash, no last checkpoint. */
  kill(): Promise<void>;
}

/**
 * Starts the server; with `profile`, it writes a V8 CPU profile under bench/tmp/profiles when it stops. It is up (and
 * `bootMs` taken) once one of Next's API routes answers, or once `answering` says so: the server listens before Next is
 * ready (server/main.ts), so a route it answers itself, such as counts, can answer first.
 */
export async function startServer(
  databaseUrl: string,
  options: { profile?: boolean; answering?: (server: Pick<BenchServer, 'baseUrl'>) => Promise<boolean> } = {},
): Promise<BenchServer> {
  const port = await freePort();
  const flags = options.profile ? ['--cpu-prof', `--cpu-prof-dir=${join(TMP_DIR, 'profiles')}`] : [];
  const started = performance.now();
  const child = spawn(process.execPath, [...flags, ...serverArguments(port)], {
    env: { ...process.env, DATABASE_URL: databaseUrl, CROWDFLOW_ADMIN_TOKEN: BENCH_ADMIN_TOKEN, NODE_ENV: 'production' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (d) => (output = (output + d).slice(-20_000)));
  child.stderr?.on('data', (d) => (output = (output + d).slice(-20_000)));
  const baseUrl = `http://127.0.0.1:${port}`;
  const forget = undoOnInterrupt(async () => void child.kill('SIGKILL'));
  const answering = options.answering;
  if (answering)
    await until(
      async () => {
        if (child.exitCode !== null) throw new Error(`the server exited with ${child.exitCode}:\n${output}`);
        return answering({ baseUrl }).catch(() => false);
      },
      120_000,
      'the server to answer',
    );
  else await waitUntilUp(baseUrl, child, () => output, { timeoutMs: 120_000, pollMs: 20 });
  const bootMs = performance.now() - started;
  return {
    baseUrl,
    pid: child.pid!,
    bootMs,
    rssBytes: () => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1] ?? 0) * 1024,
    cpuMs: () => {
      // Fields 14 and 15 of /proc/<pid>/stat (after the parenthesized command name) are utime and stime in ticks of 10 ms.
      const fields = readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(') ')[1].split(' ');
      return (Number(fields[11]) + Number(fields[12])) * 10;
    },
    log: () => output,
    async stop() {
      forget();
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      const exited = new Promise((r) => child.once('exit', r));
      const timeout = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timeout);
    },
    async kill() {
      forget();
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await exited;
    },
  };
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
    what: string,
  ) {
    super(`${what} → ${status} ${JSON.stringify(body).slice(0, 400)}`);
  }
}

/** When the server says it listened, in ms after its process started (its own `listening on … N ms` line), if it said so. */
export function listenedAfterMs(server: Pick<BenchServer, 'log'>): number | null {
  const ms = /listening on \S+ (\d+) ms after the process started/.exec(server.log())?.[1];
  return ms === undefined ? null : Number(ms);
}

/** JSON (or raw bytes) over HTTP with the admin token; anything but a 2xx throws an ApiError. */
export async function call<T = any>(
  server: Pick<BenchServer, 'baseUrl'>,
  method: string,
  path: string,
  body?: unknown,
  contentType?: string,
  extraHeaders: Record<string, string> = {},
): Promise<T> {
  const headers: Record<string, string> = { authorization: `Bearer ${BENCH_ADMIN_TOKEN}`, ...extraHeaders };
  let payload: BodyInit | undefined;
  if (body instanceof Uint8Array || typeof body === 'string') {
    payload = body as BodyInit;
    headers['content-type'] = contentType ?? 'application/octet-stream';
  } else if (body !== undefined) {
    payload = JSON.stringify(body);
    headers['content-type'] = 'application/json';
  }
  const response = await fetch(`${server.baseUrl}/api/v1${path}`, { method, headers, body: payload });
  const text = await response.text();
  const parsed = text && (response.headers.get('content-type') ?? '').includes('json') ? JSON.parse(text) : text;
  if (!response.ok) throw new ApiError(response.status, parsed, `${method} ${path}`);
  return parsed as T;
}

/** Downloads a response body to its end; returns bytes and wall time (ms) to the last byte. */
export async function download(server: BenchServer, path: string): Promise<{ bytes: number; ms: number }> {
  const started = performance.now();
  // identity: the bytes as the server writes them, as curl fetches them by default (no gzip on either side).
  const headers = { authorization: `Bearer ${BENCH_ADMIN_TOKEN}`, 'accept-encoding': 'identity' };
  const response = await fetch(`${server.baseUrl}/api/v1${path}`, { headers });
  if (!response.ok) throw new ApiError(response.status, await response.text(), `GET ${path}`);
  let bytes = 0;
  const reader = response.body!.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    bytes += value.byteLength;
  }
  return { bytes, ms: performance.now() - started };
}

/**
 * POST /events with an Idempotency-Key, sent again under the same key when the connection failed before an answer
 * (a kept-alive socket the server closed as the request went out): the retry appends nothing twice.
 */
export async function postEvents(server: BenchServer, body: string, key: string, attempts = 3): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      return void (await call(server, 'POST', '/events', body, 'application/json', { 'idempotency-key': key }));
    } catch (error) {
      if (error instanceof ApiError || attempt >= attempts) throw error;
    }
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `check` every 10 ms until it holds; throws after `timeoutMs`. */
export async function until(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`${what} not reached within ${timeoutMs} ms`);
    await sleep(10);
  }
}

/** Starts an instance of the workflow over the crowd and waits until it is running. */
/** `reentry: 'allow'` lets the users of an earlier instance of the workflow enter again. */
export async function startInstance(server: BenchServer, tenant: string, workflowId: string, crowd: string, reentry?: 'allow'): Promise<string> {
  const { instanceId } = await call<{ instanceId: string }>(server, 'POST', `/tenants/${tenant}/workflows/${workflowId}/start`, { crowd, reentry });
  await until(
    async () => (await call<{ state: string }>(server, 'GET', `/tenants/${tenant}/instances/${instanceId}`)).state === 'running',
    300_000,
    `instance ${instanceId} running`,
  );
  return instanceId;
}

/** Creates a workflow; its id. */
export async function workflow(server: BenchServer, tenant: string, name: string, definition: object): Promise<string> {
  return (await call<{ id: string }>(server, 'POST', `/tenants/${tenant}/workflows`, { name, definition })).id;
}
