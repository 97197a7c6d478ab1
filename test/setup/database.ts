import { afterAll, inject } from 'vitest';
import { app, registerApp } from '../../server/app';
import { createApp } from '../../server/create-app';
import { copyTestDatabase } from '../helpers/test-database';

// Each test file gets its own freshly migrated database (a copy of the project's migrated template,
// test/setup/template-database.ts), so files run in parallel without sharing rows, and its own app over it
// (server/create-app.ts: storage, runner and state; no engine): a test that runs an engine builds an app of its own
// with it (test/fixtures/engine/harness.ts).
const database = await copyTestDatabase(inject('templateDatabaseUrl'), 'file');
// In process.env, not only the app's: the child processes a test starts build their apps by it.
process.env.DATABASE_URL = database.url;
registerApp(createApp());

// Files share their worker process (isolate: false in vitest.config.ts): a thread a file started and left running
// (a worker thread shows as a MessagePort) would live on into the next files, so leaving one fails the file.
const threadsAtStart = openThreads();

afterAll(async () => {
  await app().close();
  registerApp(undefined);
  await database.drop();
  const left = openThreads() - threadsAtStart;
  if (left > 0) throw new Error(`this file left ${left} worker thread(s) running: close what it started (an app, a formatter)`);
});

function openThreads(): number {
  return process.getActiveResourcesInfo().filter((kind) => kind === 'MessagePort').length;
}
