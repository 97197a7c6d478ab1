// A tenant's profile write count (ProfileIndexState.seq, bumped by each write's transaction: ./profile-rows.ts,
// ./profile-merges.ts) and the snapshot of its profile index labelled with the count it reflects. The snapshot is
// derived data in its own table, UNLOGGED on PostgreSQL (prisma/models.prisma says why), so it may be missing at any
// time: the caller then rebuilds the index from the Profile rows.
import type { Database } from './database';

export interface ProfileIndexState {
  /** Committed profile writes; null: the tenant has no state row (no write counted yet). */
  seq: number | null;
  /** The stored snapshot when it reflects exactly `seq` writes; else null. */
  snapshot: Uint8Array | null;
}

export async function readProfileIndexState(database: Database, tenantId: string): Promise<ProfileIndexState> {
  const { dialect } = database;
  const { params, bind } = dialect.parameters();
  const rows = await (await database.raw()).query<{ seq: number | string; snapshotSeq: number | string | null; bytes: Uint8Array | null }>(
    `SELECT p."seq" AS "seq", s."seq" AS "snapshotSeq", s."bytes" FROM ${dialect.table('ProfileIndexState')} AS p
     LEFT JOIN ${dialect.table('ProfileIndexSnapshot')} AS s ON s."tenantId" = p."tenantId" WHERE p."tenantId" = ${bind(tenantId)}`,
    params,
  );
  const row = rows[0];
  if (!row) return { seq: null, snapshot: null };
  const seq = Number(row.seq);
  return { seq, snapshot: row.bytes && row.snapshotSeq !== null && Number(row.snapshotSeq) === seq ? row.bytes : null };
}

/** Gives the tenant a state row (count 0) if it has none: profiles written before the table existed. */
export async function ensureProfileIndexState(database: Database, tenantId: string): Promise<void> {
  const { dialect } = database;
  const { params, bind } = dialect.parameters();
  await (await database.raw()).execute(
    `INSERT INTO ${dialect.table('ProfileIndexState')} ("tenantId") VALUES (${bind(tenantId)}) ON CONFLICT ("tenantId") DO NOTHING`,
    params,
  );
}

/**
 * Stores `bytes` as the snapshot at `seq`, only while the count is still `seq` (a write committed meanwhile, here or on
 * another member, is not in it: the next load rebuilds instead). Returns whether it was stored.
 */
export async function writeProfileSnapshot(database: Database, tenantId: string, seq: number, bytes: Uint8Array): Promise<boolean> {
  const { dialect } = database;
  const { params, bind } = dialect.parameters();
  const snapshots = dialect.table('ProfileIndexSnapshot');
  // Bound in the order they appear: SQLite's parameters are positional.
  const data = dialect.typed(bind(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)), 'bytea');
  const tenant = bind(tenantId);
  const at = dialect.typed(bind(seq), 'bigint');
  const stored = await (await database.raw()).execute(
    `INSERT INTO ${snapshots} ("tenantId", "seq", "bytes", "updatedAt")
     SELECT p."tenantId", p."seq", ${data}, CURRENT_TIMESTAMP FROM ${dialect.table('ProfileIndexState')} AS p WHERE p."tenantId" = ${tenant} AND p."seq" = ${at}
     ON CONFLICT ("tenantId") DO UPDATE SET "seq" = excluded."seq", "bytes" = excluded."bytes", "updatedAt" = excluded."updatedAt"`,
    params,
  );
  return stored > 0;
}
