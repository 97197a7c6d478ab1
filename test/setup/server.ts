import { spawn } from 'node:child_process';
import type { TestProject } from 'vitest/node';
import { applyMigrations } from '../../server/storage/migrate';
import { parseDatabaseUrl } from '../../server/storage/database-url';
import { freePort, serverArguments, waitUntilUp } from '../helpers/next-server';
import { createTestDatabase } from '../helpers/test-database';

export const TEST_ADMIN_TOKEN = 'test-admin-token-0123456789abcdef';

declare module 'vitest' {
  export interface ProvidedContext {
    baseUrl: string;
    adminToken: string;
    serverDatabaseUrl: string;
  }
}

/** One real Next.js server (built by `next build` beforehand) per provider, on its own database. */
export default async function setup(project: TestProject) {
  const provider = project.name === 'postgres' ? 'postgres' : 'sqlite';
  const database = createTestDatabase(provider, `server_${project.name}`);
  await applyMigrations(parseDatabaseUrl(database.url));
  const port = await freePort();
  let output = '';
  const child = spawn(process.execPath, serverArguments(port), {
    env: { ...process.env, DATABASE_URL: database.url, CROWDFLOW_ADMIN_TOKEN: TEST_ADMIN_TOKEN, NODE_ENV: 'production' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (d) => (output += d));
  child.stderr?.on('data', (d) => (output += d));
  const baseUrl = `http://127.0.0.1:${port}`;
  await waitUntilUp(baseUrl, child, () => output, { timeoutMs: 60_000, pollMs: 200 });
  project.provide('baseUrl', baseUrl);
  project.provide('adminToken', TEST_ADMIN_TOKEN);
  project.provide('serverDatabaseUrl', database.url);
  return async () => {
    child.kill('SIGTERM');
    await new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)));
    if (/\b500\b|unexpected error/.test(output)) console.warn(`[${project.name} server log]\n${output.slice(-4000)}`);
    await database.drop();
  };
}
