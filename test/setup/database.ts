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

afterAll(async () => {
  await app().close();
  registerApp(undefined);
  await database.drop();
});
