import { afterAll, expect, it } from 'vitest';
import { decodeEvents } from '../../server/engine/log-codec';
import type { LoggedEvent } from '../../server/engine/types';
import { parseDatabaseUrl } from '../../server/storage/database-url';
import { applyMigrations } from '../../server/storage/migrate';
import { createTestDatabase } from '../helpers/test-database';
import { sqlOn } from '../helpers/database-sql';

const BYTES_MIGRATION = '20261130120415_event_log_bytes';
const provider = process.env.CROWDFLOW_TEST_PROVIDER ?? 'sqlite';
const database = createTestDatabase(provider, 'upgrade');
afterAll(() => database.drop());

const events: LoggedEvent[] = [
  { user: 1, type: 'purchase', data: { amount: 120, sku: 'ünï' }, time: 1_700_000_000_000 },
  { user: 5, type: 'view', data: {}, time: 1_700_000_000_001 },
];

/** Runs `text` on the upgrade database and returns its rows. */
const sql = <T>(text: string, params: unknown[] = []) => sqlOn<T>(database.url, text, params);

it('an upgrade keeps EventLog rows written as JSON text before the byte format, and they read back as they were', async () => {
  const target = parseDatabaseUrl(database.url);
  const older = await applyMigrations(target, { before: BYTES_MIGRATION });
  expect(older.length).toBeGreaterThan(0);
  expect(older.every((name) => name < BYTES_MIGRATION)).toBe(true);
  await sql('INSERT INTO "Tenant" ("id", "name", "partitions") VALUES ($1, $2, $3)', ['tn_old', 'old', 1]);
  await sql('INSERT INTO "EventLog" ("tenantId", "partition", "offset", "events", "count") VALUES ($1, $2, $3, $4, $5)', [
    'tn_old',
    0,
    1,
    JSON.stringify(events),
    2,
  ]);

  const upgrade = await applyMigrations(target);
  expect(upgrade[0]).toBe(BYTES_MIGRATION);
  expect(upgrade.slice(1).every((name) => name > BYTES_MIGRATION)).toBe(true);
  const [row] = await sql<{ events: Uint8Array; count: number }>('SELECT "events", "count" FROM "EventLog" WHERE "tenantId" = $1', ['tn_old']);
  expect(row.events).toBeInstanceOf(Uint8Array);
  expect(decodeEvents(row.events)).toEqual(events);
  expect(Number(row.count)).toBe(2);
});
