// The rows of a profile write in bulk (an import's chunk, server/profiles/import.ts): upserted with the write counted
// (ProfileIndexState.seq) in one transaction. SQLite: multi-row upserts, a few calls into the driver; PostgreSQL: COPY
// into a staging table, then one upsert from it (measured against INSERT … SELECT FROM unnest(…):
// bench/pg-profile-write.ts, BENCHMARKS.md).
import type { Database } from './database';
import { copyTextField } from './pg-copy';
import type { RawStatement } from './raw';

/** SQLite: rows per multi-row INSERT (3 bound parameters each, far below SQLite's limit). */
const SQLITE_ROWS_PER_STATEMENT = 250;
/** PostgreSQL: the temporary table a chunk's rows are copied into before one upsert takes them (per connection). */
const PG_STAGING_TABLE = 'profile_import_rows';

/** Upserts the rows ([user, attributes JSON]) and counts the write, in one transaction; returns the write counter. */
export async function upsertProfileRows(database: Database, tenantId: string, rows: Array<[number, string]>): Promise<number> {
  const d = database.dialect;
  const table = d.table('Profile');
  const statements: RawStatement[] = [];
  const upsert = `ON CONFLICT ("tenantId", "user") DO UPDATE SET "attributes" = excluded."attributes", "updatedAt" = excluded."updatedAt"`;
  if (d.roundTripPerStatement) {
    // The staging table's rows go at the commit, or with a rollback.
    let data = '';
    for (const [user, text] of rows) data += `${user}\t${copyTextField(text)}\n`;
    statements.push(
      { sql: `CREATE TEMP TABLE IF NOT EXISTS ${PG_STAGING_TABLE} ("user" bigint, "attributes" text) ON COMMIT DELETE ROWS`, params: [] },
      { sql: `COPY ${PG_STAGING_TABLE} ("user", "attributes") FROM STDIN`, params: [], copyFrom: Buffer.from(data) },
      {
        sql: `INSERT INTO ${table} ("tenantId", "user", "attributes", "updatedAt") SELECT $1, "user", "attributes", CURRENT_TIMESTAMP FROM ${PG_STAGING_TABLE} ${upsert}`,
        params: [tenantId],
      },
    );
  } else {
    // Several rows a statement: fewer calls into the driver (a full statement's SQL text is prepared once and cached).
    for (let i = 0; i < rows.length; i += SQLITE_ROWS_PER_STATEMENT) {
      const part = rows.slice(i, i + SQLITE_ROWS_PER_STATEMENT);
      const params: unknown[] = [];
      for (const [user, text] of part) params.push(tenantId, user, text);
      statements.push({ sql: sqliteInsert(table, part.length, upsert), params });
    }
  }
  const state = d.table('ProfileIndexState');
  const { params, bind } = d.parameters();
  statements.push({
    sql: `INSERT INTO ${state} ("tenantId", "seq") VALUES (${bind(tenantId)}, 1) ON CONFLICT ("tenantId") DO UPDATE SET "seq" = ${state}."seq" + 1 RETURNING ${d.numberColumn('seq')}`,
    params,
    returning: true,
  });
  const results = await (await database.raw()).transaction(statements);
  return Number(results[results.length - 1][0].seq);
}

/** The SQL text of a multi-row SQLite upsert, built once per row count (most statements are full ones). A memo of a pure
 * function, bounded by the rows of a statement: module-level, not app state. */
const sqliteInserts = new Map<string, string>();

function sqliteInsert(table: string, rows: number, upsert: string): string {
  const key = `${table} ${rows}`;
  let sql = sqliteInserts.get(key);
  if (sql === undefined) {
    const values = Array.from({ length: rows }, () => '(?, ?, ?, CURRENT_TIMESTAMP)').join(', ');
    sqliteInserts.set(key, (sql = `INSERT INTO ${table} ("tenantId", "user", "attributes", "updatedAt") VALUES ${values} ${upsert}`));
  }
  return sql;
}
