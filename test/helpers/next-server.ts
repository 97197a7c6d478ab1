import type { ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';

// Shared by the test servers (test/setup/server.ts) and the benchmark servers (bench/lib/server.ts).

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/** Waits until a spawned `next start` answers the API (401 without credentials); kills it when it never does. */
export async function waitUntilUp(url: string, child: ChildProcess, log: () => string, options: { timeoutMs: number; pollMs: number }): Promise<void> {
  const deadline = Date.now() + options.timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`next start exited with ${child.exitCode}:\n${log()}`);
    try {
      const response = await fetch(`${url}/api/v1/tenants`);
      if (response.status === 401) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, options.pollMs));
  }
  child.kill('SIGKILL');
  throw new Error(`next start did not answer within ${options.timeoutMs / 1000} s:\n${log()}`);
}
