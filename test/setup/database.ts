import { afterAll } from 'vitest';
import { applyMigrations } from '../../server/storage/migrate';
import { parseDatabaseUrl } from '../../server/storage/database-url';
import { closeDb } from '../../server/storage/db';
import { resetEnvForTests } from '../../server/env';
import { createTestDatabase } from '../helpers/test-database';

// Each test file gets its own freshly migrated database, so files run in parallel without sharing rows.
const provider = process.env.CROWDFLOW_TEST_PROVIDER ?? 'sqlite';
const database = createTestDatabase(provider, 'file');
process.env.DATABASE_URL = database.url;
resetEnvForTests();
await applyMigrations(parseDatabaseUrl(database.url));

afterAll(async () => {
  await closeDb();
  await database.drop();
});
