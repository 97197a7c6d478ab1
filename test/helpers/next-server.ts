import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { waitFor } from './wait-for';

// Shared by the test servers (test/setup/server.ts) and the benchmark servers (bench/lib/server.ts).

/**
 * Node arguments that start the compiled server entry of the last build (server/main.ts compiled by
 * scripts/build-server.mjs into the build folder, as `npm start` does, with its semi-space flag) on 127.0.0.1:`port`.
 */
export function serverArguments(port: number): string[] {
  return ['--max-semi-space-size=32', join(process.env.CROWDFLOW_DIST_DIR || '.next', 'crowdflow-server', 'main.mjs'), '-p', String(port), '-H', '127.0.0.1'];
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/** Waits until a spawned server answers the API (401 without credentials); kills it when it never does. */
export async function waitUntilUp(url: string, child: ChildProcess, log: () => string, options: { timeoutMs: number; pollMs: number }): Promise<void> {
  const exited = () => new Error(`the server exited with ${child.exitCode}:\n${log()}`);
  const answers = async () => {
    if (child.exitCode !== null) throw exited();
    return (await fetch(`${url}/api/v1/tenants`).catch(() => null))?.status === 401; // null: not listening yet
  };
  try {
    await waitFor(`the server at ${url} to answer`, answers, Boolean, { timeoutMs: options.timeoutMs, everyMs: options.pollMs });
  } catch (error) {
    if (child.exitCode !== null) throw exited();
    child.kill('SIGKILL');
    throw new Error(`${(error as Error).message}:\n${log()}`);
  }
}

export type SpawnedServer = { baseUrl: string; child: ChildProcess; log: () => string; exited: Promise<void> };

/** A server process (server/main.ts over the last build) on its own port and database, answering once this resolves. */
export async function spawnServer(databaseUrl: string, adminToken: string): Promise<SpawnedServer> {
  const port = await freePort();
  let output = '';
  const child = spawn(process.execPath, serverArguments(port), {
    env: { ...process.env, DATABASE_URL: databaseUrl, CROWDFLOW_ADMIN_TOKEN: adminToken, NODE_ENV: 'production' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (d) => (output += d));
  child.stderr?.on('data', (d) => (output += d));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const baseUrl = `http://127.0.0.1:${port}`;
  await waitUntilUp(baseUrl, child, () => output, { timeoutMs: 60_000, pollMs: 100 });
  return { baseUrl, child, log: () => output, exited };
}
