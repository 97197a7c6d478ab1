// The upgrade that gives the rows keyed by an instance, workflow, destination or cap their tenant (migration
// shard_rows_tenant), on a database an older release wrote, and on PostgreSQL the journal sequence that follows it.
import { afterAll, expect, it } from 'vitest';
import { parseDatabaseUrl } from '../../server/storage/database-url';
import { applyMigrations } from '../../server/storage/migrate';
import { createTestDatabase } from '../helpers/test-database';
import { sqlOn } from '../helpers/database-sql';

const BACKFILL_MIGRATION = '20261207211444_shard_rows_tenant';
const provider = process.env.CROWDFLOW_TEST_PROVIDER ?? 'sqlite';
const database = createTestDatabase(provider, 'backfill');
afterAll(() => database.drop());

/** Runs `text` on the upgrade database and returns its rows. */
const sql = <T>(text: string, params: unknown[] = []) => sqlOn<T>(database.url, text, params);

/** A tenant's rows as the release before the backfill wrote them: one in each table that had no tenant column. */
async function olderRows(tenant: string): Promise<void> {
  const bytes = Buffer.from([1, 2, 3]);
  await sql('INSERT INTO "Tenant" ("id", "name", "partitions") VALUES ($1, $2, 1)', [tenant, tenant]);
  await sql('INSERT INTO "Workflow" ("id", "tenantId", "name", "currentVersion", "draft") VALUES ($1, $2, $3, 1, $4)', [`wf_${tenant}`, tenant, 'w', '{}']);
  await sql('INSERT INTO "WorkflowVersion" ("workflowId", "version", "definition") VALUES ($1, 1, $2)', [`wf_${tenant}`, '{}']);
  await sql('INSERT INTO "Instance" ("id", "tenantId", "workflowId", "version", "crowdName", "state", "userCount") VALUES ($1, $2, $3, 1, $4, $5, 3)', [
    `in_${tenant}`,
    tenant,
    `wf_${tenant}`,
    'c',
    'running',
  ]);
  const instance = `in_${tenant}`;
  await sql('INSERT INTO "ShardCheckpoint" ("instanceId", "partition", "journalSeq", "data") VALUES ($1, 0, 1, $2)', [instance, bytes]);
  await sql('INSERT INTO "ShardTimerPlan" ("instanceId", "partition", "journalSeq", "cronNext") VALUES ($1, 0, 1, $2)', [instance, '{}']);
  await sql('INSERT INTO "CrowdChange" ("instanceId", "partition", "journalSeq", "timeMs", "data") VALUES ($1, 0, 1, 0, $2)', [instance, bytes]);
  await sql('INSERT INTO "Conversion" ("instanceId", "partition", "step", "bitmap") VALUES ($1, 0, $2, $3)', [instance, 'done', bytes]);
  await sql('INSERT INTO "CountsSample" ("instanceId", "resolution", "at", "counts") VALUES ($1, 60000, 0, $2)', [instance, '{}']);
  await sql(
    'INSERT INTO "WebhookDestination" ("id", "tenantId", "name", "url", "secret", "headers", "batchSize", "timeoutMs", "cursor") VALUES ($1, $2, $3, $4, $5, $6, 10, 1000, 0)',
    [`wd_${tenant}`, tenant, 'crm', 'https://hooks.example/crm', 's', '{}'],
  );
  await sql(
    'INSERT INTO "WebhookDelivery" ("id", "destinationId", "fromSeq", "fromOffset", "status", "body", "users", "createdAt") VALUES ($1, $2, 1, 0, $3, $4, 1, $5)',
    [`wd_${tenant}-1-0`, `wd_${tenant}`, 'delivered', '{}', new Date(0).toISOString()],
  );
  await sql('INSERT INTO "FrequencyCap" ("id", "tenantId", "name", "maxDeliveries", "windowMs", "exempt") VALUES ($1, $2, $3, 2, 86400000, $4)', [
    `fc_${tenant}`,
    tenant,
    'daily',
    '[]',
  ]);
  await sql('INSERT INTO "FrequencyCapWindow" ("capId", "bucket", "levels", "version") VALUES ($1, 1, $2, 1)', [`fc_${tenant}`, bytes]);
}

const BACKFILLED = [
  'ShardCheckpoint',
  'ShardTimerPlan',
  'CrowdChange',
  'Conversion',
  'CountsSample',
  'WorkflowVersion',
  'WebhookDelivery',
  'FrequencyCapWindow',
];

it("an upgrade gives each row of the eight tables its parent's tenant, and PostgreSQL's journal seqs continue after the journal's max", async () => {
  const target = parseDatabaseUrl(database.url);
  const older = await applyMigrations(target, { before: BACKFILL_MIGRATION });
  expect(older.every((name) => name < BACKFILL_MIGRATION)).toBe(true);
  await olderRows('tn_a');
  await olderRows('tn_b');
  for (const seq of [1, 2, 7]) {
    await sql('INSERT INTO "Journal" ("seq", "tenantId", "instanceId", "partition", "toStep", "count", "timeMs") VALUES ($1, $2, $3, 0, $4, 1, 0)', [
      seq,
      seq === 7 ? 'tn_b' : 'tn_a',
      seq === 7 ? 'in_tn_b' : 'in_tn_a',
      'done',
    ]);
  }

  const upgrade = await applyMigrations(target);
  expect(upgrade[0]).toBe(BACKFILL_MIGRATION);
  for (const table of BACKFILLED) {
    const rows = await sql<{ tenantId: string }>(`SELECT "tenantId" FROM "${table}" ORDER BY "tenantId"`);
    expect(
      rows.map((row) => row.tenantId),
      table,
    ).toEqual(['tn_a', 'tn_b']);
  }
  if (target.provider === 'postgres') {
    const [next] = await sql<{ seq: string }>(`SELECT nextval('"Journal_seq_seq"') AS "seq"`);
    expect(Number(next.seq)).toBe(8);
  }
});
