// Every statement the storage layer sends names the tenant of the rows it touches, so the tenant-owned tables can be
// distributed by tenant with Citus (tenant id as distribution column, colocated) and each statement routed to the one
// node holding that tenant, with no change to the code (docs/SCALING.md). The evidence is the real statements: a
// small journey runs on this file's database (ingest with dedupe, moves, timers, checkpoints, recovery, a crowd
// update, point-in-time reads, paths and funnels, notifications, retention, the storage's webhook operations, a
// webhook pump round, stop, tenant delete) while every statement sent through the drivers is recorded, and each
// reference to a distributed table must filter (or, for an INSERT, carry) `tenantId`.
// The exceptions are listed below, each with why.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { app } from '../../server/app';
import { funnelOf } from '../../server/analytics/funnel';
import { pathsOf } from '../../server/analytics/paths';
import { countsAsOf, stepUsersAsOf } from '../../server/engine/as-of';
import { ingest } from '../../server/engine/ingest';
import { updateTenantLimits } from '../../server/limits/limits';
import { applyJournalRetention } from '../../server/engine/journal-retention';
import { commitConsumer, createConsumer, readNotifications } from '../../server/notifications/notifications';
import { upsertProfiles } from '../../server/profiles/profiles';
import { db, database } from '../helpers/app-db';
import { deleteTenant } from '../../server/tenants/tenants';
import { advance, crowd, range, restartEngine, send, settle, start, startHarness, workflow } from '../fixtures/engine/harness';
import { captureStatements, models, normalized, tableReferences } from '../helpers/tenant-scope';
import { seqsFollowTheNewestRow } from '../../server/storage/journal/max-seq';
import { RoaringBitmap32, serializeBitmap } from '../../server/crowd/bitmap';
import { getDelivery, listDeliveries } from '../../server/webhooks/deliveries';
import { WebhookPump } from '../../server/webhooks/pump';
import { commitCutRound, releaseQuietPart, replaceCappedRows, replaceQuietRows, updateCapRow } from '../../server/storage/webhook-rows';

const MINUTE = 60_000;

/**
 * Tables that are not distributed by tenant. Reference tables are small and replicated to every node, so a statement
 * on them routes anywhere; local tables stay on the coordinator. (Citus: "Table Types", docs/SCALING.md.)
 */
const NOT_DISTRIBUTED: Record<string, string> = {
  Tenant: 'reference: looked up by name and id, read by every member; a distributed table cannot keep `name` unique',
  ApiKey: 'reference: authentication finds a key by its hash before it knows the tenant',
  Session: 'local: studio sign-ins, no tenant',
  AuditEvent: 'local: kept after its tenant is deleted, some rows have no tenant',
  Procedure: 'local: the procedure queue is claimed across tenants (FOR UPDATE SKIP LOCKED), some have no tenant',
  ProcedureStep: 'local: the steps of Procedure rows',
  ClusterMember: 'local: membership is per cluster (advisory locks and LISTEN/NOTIFY live on the coordinator)',
  ClusterGather: 'local: cluster coordination, read for every tenant at once by the membership',
  BaselineUserStep: 'local: the bench baseline only',
};

/**
 * References that reach past one tenant, on purpose or for now: a reference of `table` whose (sub)query is `query`
 * (placeholders are `$n` on PostgreSQL, `?` on SQLite); `sqliteOnly`: PostgreSQL must not send it.
 */
const ACROSS_TENANTS: { table: string; query: RegExp; why: string; sqliteOnly?: true }[] = [
  // Deliberate: one statement for every lease a process holds (8,000 partitions of 1,000 tenants renewed one by one
  // were 1,600 writes a second). Citus runs an UPDATE without the distribution column on every shard.
  { table: 'PartitionState', query: /^UPDATE "PartitionState" SET "leaseUntilMs" = \S+ WHERE "owner" = \S+$/, why: 'renew all leases of one owner' },
  // Deliberate sweeps over every tenant, rare and off the hot path; Citus runs them on every shard in parallel (a GROUP BY
  // of the distribution column is pushed down whole): expired snapshots (hourly), instances a crash left half-started
  // or half-stopped (at engine start), which tenants have journal rows to keep in bounds (each retention run, which
  // then works tenant by tenant).
  { table: 'InstanceSnapshot', query: /^DELETE FROM "InstanceSnapshot" WHERE "InstanceSnapshot"\."expiresAt" < \S+$/, why: 'expired snapshots' },
  {
    table: 'Instance',
    query: /^SELECT .* FROM "Instance" WHERE "Instance"\."state" IN \(\S+\)( LIMIT \S+)? OFFSET \S+$/,
    why: 'interrupted operations at start',
  },
  {
    table: 'Journal',
    query: /^SELECT COUNT\(\*\) AS "_count\$_all", "Journal"\."tenantId" FROM "Journal" WHERE 1=1 GROUP BY "Journal"\."tenantId"/,
    why: 'retention: tenants',
  },
  // The webhook pump over every tenant's destinations: which are behind their tenant's newest seq, held deliveries
  // coming due; and its sweeps (once a minute): old deliveries, deliveries whose procedure was never submitted, cap
  // windows no move counts in any more, and the compactions, grouped by tenant first.
  {
    table: 'WebhookDestination',
    query: /^SELECT d\."id", d\."tenantId", d\."cursor", \(.*\) AS "newest" FROM "WebhookDestination" d$/,
    why: 'pump: destinations behind',
  },
  {
    table: 'QuietDelivery',
    query: /WHERE \("QuietDelivery"\."status" = \S+ AND "QuietDelivery"\."releaseAt" <= \S+\) ORDER BY/,
    why: 'pump: held deliveries due',
  },
  {
    table: 'WebhookDelivery',
    query: /^DELETE FROM "WebhookDelivery" WHERE \("WebhookDelivery"\."status" IN \(.*\) AND "WebhookDelivery"\."createdAt" < \S+\)$/,
    why: 'pump sweep: old deliveries',
  },
  {
    table: 'WebhookDelivery',
    query: /WHERE \("WebhookDelivery"\."status" = \S+ AND "WebhookDelivery"\."id" > \S+\) ORDER BY "WebhookDelivery"\."id"/,
    why: 'pump sweep: orphans',
  },
  {
    table: 'FrequencyCap',
    query: /^SELECT "FrequencyCap"\."id", "FrequencyCap"\."tenantId", "FrequencyCap"\."windowMs" FROM "FrequencyCap" WHERE 1=1/,
    why: 'pump sweep: old cap windows',
  },
  { table: 'CappedDelivery', query: /GROUP BY "CappedDelivery"\."tenantId", /, why: 'pump sweep: capped compaction' },
  { table: 'QuietDelivery', query: /GROUP BY "QuietDelivery"\."tenantId", /, why: 'pump sweep: quiet compaction' },
  // The hourly downsampling of the counts history: minute samples older than 2 days, hour samples older than 90.
  {
    table: 'CountsSample',
    query: /^SELECT .* FROM "CountsSample" WHERE \("CountsSample"\."resolution" = \S+ AND "CountsSample"\."at" < \S+\) ORDER BY .*$/,
    why: 'counts history downsampling',
  },
  {
    table: 'CountsSample',
    query: /^DELETE FROM "CountsSample" WHERE \("CountsSample"\."resolution" = \S+ AND "CountsSample"\."at" < \S+\)$/,
    why: 'counts history downsampling',
  },
  // SQLite only, which is one file and never distributed: its one writer continues the journal's seqs from the table's
  // max (PostgreSQL takes them from a sequence), so a tenant's delete keeps the newest row, and a restart's choice of
  // how to replay compares an instance's rows with the journal's newest.
  { table: 'Journal', query: /^SELECT COALESCE\(MAX\("seq"\), 0\)( AS s)? FROM "Journal"$/, why: "SQLite's journal seq", sqliteOnly: true },
  {
    table: 'Journal',
    query: /^SELECT "Journal"\."seq" FROM "Journal" WHERE 1=1( LIMIT \S+)? OFFSET \S+$/,
    why: "SQLite's journal seq (tenant delete)",
    sqliteOnly: true,
  },
];

let captured: ReturnType<typeof captureStatements>;
beforeAll(() => {
  captured = captureStatements();
});
afterAll(() => captured.stop());

describe('storage statements name their tenant', () => {
  it('tells a reference filtered by its tenant from one that is not (the check itself)', () => {
    const tables = new Set(['Journal', 'Instance', 'EventLog']);
    const scoped = (sql: string) => tableReferences(sql, tables).map((r) => `${r.table} ${r.scoped}`);
    expect(scoped('SELECT "seq" FROM "Journal" WHERE "tenantId" = $1 AND "seq" > $2')).toEqual(['Journal true']);
    expect(scoped('SELECT "seq" FROM "Journal" WHERE "instanceId" = $1 AND "seq" > $2')).toEqual(['Journal false']);
    // A subquery's filter is its own: the outer reference is not scoped by it, nor the inner by the outer's.
    expect(scoped('DELETE FROM "Journal" WHERE "seq" IN (SELECT j."seq" FROM "Journal" j WHERE j."tenantId" = ?)')).toEqual(['Journal false', 'Journal true']);
    expect(scoped('SELECT 1 FROM "Journal" j WHERE j."tenantId" = ? AND EXISTS (SELECT 1 FROM "Instance" i WHERE i."id" = j."instanceId")')).toEqual([
      'Journal true',
      'Instance false',
    ]);
    expect(scoped('SELECT 1 FROM "Journal" j WHERE j."tenantId" = ? AND EXISTS (SELECT 1 FROM "Instance" i WHERE i."tenantId" = j."tenantId")')).toEqual([
      'Journal true',
      'Instance true',
    ]);
    expect(scoped('INSERT INTO "EventLog" ("tenantId", "partition") VALUES (?, ?)')).toEqual(['EventLog true']);
    expect(scoped('INSERT INTO "Journal" ("seq", "tenantId") SELECT (SELECT MAX("seq") FROM "Journal") + 1, ?')).toEqual(['Journal true', 'Journal false']);
    expect(scoped('UPDATE "Instance" SET "state" = ? WHERE ("Instance"."id" = ? AND 1=1)')).toEqual(['Instance false']);
  });

  it('a journey from ingest to tenant delete sends no statement on a distributed table without its tenant', async () => {
    const h = await startHarness(2, undefined, { checkpointEveryMoves: 1, checkpointEveryMs: 0 });
    try {
      await upsertProfiles(database(), h.tenantId, [{ user: 1, attributes: { plan: 'pro' } }]);
      const wf = await workflow(h, {
        goal: { condition: 'event.type == "buy"' },
        steps: [
          {
            name: 'entry',
            kind: 'branch',
            branches: [
              { condition: 'event.type == "open"', next: 'wait' },
              { condition: 'profile.plan == "pro"', next: 'tick' },
            ],
          },
          { name: 'wait', kind: 'delay', after: '10m', next: 'tick' },
          { name: 'tick', kind: 'timer', cron: '0 0 * * * *', next: 'done' },
          { name: 'done', kind: 'direct' },
        ],
      });
      await crowd(h, 'c', range(1, 40));
      const instanceId = await start(h, wf, 'c');
      const principal = { kind: 'tenant' as const, tenantId: h.tenantId, keyId: 'k' };
      await ingest(
        database(),
        app().state,
        principal,
        { events: range(1, 10).map((user) => ({ user, type: 'open', id: `o-${user}` })) },
        h.clock.now(),
        'key-1',
      );
      h.engine.wakeTenant(h.tenantId);
      await h.engine.drain(h.tenantId);
      await send(h, [
        { user: 1, type: 'buy' },
        { user: 20, type: 'other' },
      ]);
      await advance(h, 15 * MINUTE);
      await advance(h, 60 * MINUTE);
      await crowd(h, 'c', range(5, 50));
      await settle(h, h.engine.updateInstanceCrowd(h.tenantId, instanceId, { crowd: 'c' }));
      const tenant = await db().tenant.findUniqueOrThrow({ where: { id: h.tenantId } });
      await countsAsOf(database(), tenant, instanceId, h.clock.now() - 30 * MINUTE, h.clock.now());
      await stepUsersAsOf(database(), tenant, instanceId, 'done', h.clock.now() - 30 * MINUTE, h.clock.now());
      await h.engine.whereIsUser(h.tenantId, 3);
      const scope = { tenantId: h.tenantId, instanceId, partitions: h.partitions, window: { from: 0, to: h.clock.now() + 1 } };
      await pathsOf(database(), scope);
      await funnelOf(database(), scope, ['entry', 'wait', 'done']);
      await restartEngine(h);
      await readNotifications(database(), h.tenantId, 0, 100);
      await createConsumer(database(), h.tenantId, 'crm', 'head');
      await commitConsumer(database(), h.tenantId, 'crm', 1, h.clock.now());
      await updateTenantLimits(database(), h.tenantId, { journalRetentionHours: 1 });
      await advance(h, 3 * 60 * MINUTE);
      await applyJournalRetention(database(), h.clock);
      await webhookOperations(h.tenantId, instanceId, h.clock.now());
      // The pump's round over the tenant's moves, as its loop runs it (every move to the destination, its sweeps).
      expect(await new WebhookPump({ database: database(), runner: h.runner, clock: h.clock }).pumpOnce()).toBeGreaterThan(0);
      await settle(h, h.engine.stopInstance(h.tenantId, instanceId));
      await deleteTenant(database(), tenant);
    } finally {
      await h.close();
    }

    const all = models();
    const names = all.map((m) => m.name);
    const distributed = new Set(all.filter((m) => m.tenantColumn && !(m.name in NOT_DISTRIBUTED)).map((m) => m.name));
    for (const name of names) expect(distributed.has(name) || name in NOT_DISTRIBUTED, `${name} has a tenantId or is classified here`).toBe(true);

    const unscoped: string[] = [];
    const conflicts: string[] = [];
    const seen = new Set<string>();
    for (const text of captured.statements) {
      const sql = normalized(text, names);
      for (const reference of tableReferences(sql, distributed)) {
        seen.add(reference.table);
        if (reference.scoped) continue;
        const allowed = ACROSS_TENANTS.filter((a) => !a.sqliteOnly || seqsFollowTheNewestRow(database()));
        if (allowed.some((a) => a.table === reference.table && a.query.test(reference.query))) continue;
        unscoped.push(`${reference.table}: ${sql}`);
      }
      // An upsert names the unique key it conflicts on; on a distributed table every unique key holds the tenant.
      const upsert = /^INSERT INTO "(\w+)".* ON CONFLICT \(([^)]*)\)/.exec(sql);
      if (upsert && distributed.has(upsert[1]) && !upsert[2].includes('"tenantId"')) conflicts.push(sql);
    }
    expect(unscoped).toEqual([]);
    expect(conflicts).toEqual([]);
    // The journey reached the hot tables: a statement on them that lost its tenant would have been seen.
    expect([...seen].sort()).toEqual(
      expect.arrayContaining([
        'EventLog',
        'IngestRecord',
        'Journal',
        'PartitionState',
        'Profile',
        'Consumer',
        'Instance',
        'WebhookDestination',
        'CappedDelivery',
        'QuietDelivery',
        'FrequencyCap',
        'ShardCheckpoint',
        'ShardTimerPlan',
        'CrowdChange',
        'Conversion',
        'WorkflowVersion',
        'FrequencyCapWindow',
        'WebhookDelivery',
      ]),
    );
  });
});

/**
 * The storage's webhook operations (server/storage/webhook-rows.ts: a cut round's cursor move, a quiet-hours release,
 * the compaction of capped and dropped rows, a cap's change) over rows of the tenant made here, as the pump, the
 * release and the cap routes would have made them.
 */
async function webhookOperations(tenantId: string, instanceId: string, now: number): Promise<void> {
  const users = serializeBitmap(RoaringBitmap32.from([1, 2]));
  const destination = await db().webhookDestination.create({
    data: {
      ...{ id: 'wd-scope', tenantId, name: 'crm', url: 'https://hooks.example/crm', secret: 's', headers: '{}' },
      ...{ batchSize: 100, timeoutMs: 1_000, cursor: 0n, allNotifications: true },
    },
  });
  const cap = await db().frequencyCap.create({ data: { id: 'fc-scope', tenantId, name: 'daily', maxDeliveries: 2, windowMs: 86_400_000n, exempt: '[]' } });
  const read = { cursor: 0n, cursorUsers: 0, lostThrough: 0n };
  const delivery = {
    id: 'wd-scope-1-0',
    tenantId,
    destinationId: destination.id,
    fromSeq: 1n,
    fromOffset: 0,
    status: 'pending',
    body: '{}',
    users: 2,
    createdAt: new Date(now),
  };
  const capWindow = { capId: cap.id, bucket: 1n, levels: new Uint8Array(4), version: null };
  const rows = { deliveries: [delivery], capWindows: [capWindow], capped: [], quiet: [] };
  expect(await commitCutRound(database(), destination, read, { ...read, cursor: 1n }, rows)).toBe(true);
  const viewer = { admin: false };
  expect((await listDeliveries(database(), tenantId, 'crm', { limit: 10 }, viewer)).deliveries.map((d) => d.id)).toEqual([delivery.id]);
  expect((await getDelivery(database(), tenantId, 'crm', delivery.id, viewer)).status).toBe('pending');
  const capped = (id: string) => ({ id, tenantId, destinationId: destination.id, seq: null, instanceId, step: 'done', users, count: 2, timeMs: BigInt(now) });
  await db().cappedDelivery.createMany({ data: [capped('cd-1'), capped('cd-2')] });
  await replaceCappedRows(database(), ['cd-1', 'cd-2'], capped('cd-3'));
  const quiet = (id: string, status: string) => ({
    ...{ id, tenantId, destinationId: destination.id, seq: 1n, bulk: false, offsetBase: 0, instanceId, step: 'done', zone: 'UTC' },
    ...{ users, count: 2, timeMs: BigInt(now), status, releaseAt: BigInt(now) },
  });
  await db().quietDelivery.createMany({ data: [quiet('qd-1', 'held'), quiet('qd-2', 'dropped'), quiet('qd-3', 'dropped')] });
  expect(await releaseQuietPart(database(), { id: 'qd-1', tenantId, releasedUsers: 0 }, 2, true, [])).toBe(true);
  await replaceQuietRows(database(), ['qd-2', 'qd-3'], quiet('qd-4', 'dropped'));
  await updateCapRow(database(), cap, { maxDeliveries: 3 }, true);
  expect(await db().cappedDelivery.count({ where: { tenantId } })).toBe(1);
  expect(await db().quietDelivery.findMany({ where: { tenantId }, select: { id: true, status: true }, orderBy: { id: 'asc' } })).toEqual([
    { id: 'qd-1', status: 'sent' },
    { id: 'qd-4', status: 'dropped' },
  ]);
}
