import { afterAll } from 'vitest';
import { app, registerApp } from '../../server/app';
import { createApp } from '../../server/create-app';
import { applyMigrations } from '../../server/storage/migrate';
import { parseDatabaseUrl } from '../../server/storage/database-url';
import { resetEnvForTests } from '../../server/env';
import { createTestDatabase } from '../helpers/test-database';

// Each test file gets its own freshly migrated database, so files run in parallel without sharing rows, and its own
// app over it (server/create-app.ts: storage, runner and state; no engine): a test that runs an engine builds an app of
// its own with it (test/fixtures/engine/harness.ts).
const provider = process.env.CROWDFLOW_TEST_PROVIDER ?? 'sqlite';
const database = createTestDatabase(provider, 'file');
process.env.DATABASE_URL = database.url;
resetEnvForTests();
await applyMigrations(parseDatabaseUrl(database.url));
registerApp(createApp());

afterAll(async () => {
  await app().close();
  registerApp(undefined);
  await database.drop();
});
