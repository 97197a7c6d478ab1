// DeadLetter rows (server/engine/dead-letter.ts decides what is set aside): inserted in the commit that moves the
// partition's offset past their events (./journal/commit.ts), then listed, read and discarded by the tenant.
import type { Database } from './database';
import type { RawStatement } from './raw';

/** A dead letter to insert: `event` is the logged event's JSON. */
export interface DeadLetterWrite {
  id: string;
  instanceId: string;
  step: string;
  partition: number;
  logOffset: number;
  eventIndex: number;
  event: string;
  reason: string;
}

/** A stored dead letter; `createdAt` as the driver gives it (a Date on PostgreSQL, text on SQLite). */
export type DeadLetterRow = {
  id: string;
  instanceId: string;
  step: string;
  partition: unknown;
  logOffset: unknown;
  eventIndex: unknown;
  event: string;
  reason: string;
  createdAt: unknown;
};

/** INSERT statements of a batch's dead letters, for its commit (none when there are none). */
export function deadLetterInserts(database: Database, tenantId: string, letters: DeadLetterWrite[]): RawStatement[] {
  const columns = '"id", "tenantId", "instanceId", "step", "partition", "logOffset", "eventIndex", "event", "reason"';
  const statements: RawStatement[] = [];
  // 9 parameters a row: 500 rows keep a statement far below SQLite's bound-parameter limit.
  for (let start = 0; start < letters.length; start += 500) {
    const { params, bind } = database.dialect.parameters();
    const values = letters
      .slice(start, start + 500)
      .map((p) => `(${[p.id, tenantId, p.instanceId, p.step, p.partition, p.logOffset, p.eventIndex, p.event, p.reason].map(bind).join(', ')})`);
    statements.push({ sql: `INSERT INTO ${database.dialect.table('DeadLetter')} (${columns}) VALUES ${values.join(', ')}`, params });
  }
  return statements;
}

const COLUMNS = '"id", "instanceId", "step", "partition", "logOffset", "eventIndex", "event", "reason", "createdAt"';

/** Up to `limit` of the tenant's dead letters after the one with id `after`, oldest first. */
export async function deadLetterRows(database: Database, tenantId: string, limit: number, after?: string): Promise<DeadLetterRow[]> {
  const { params, bind } = database.dialect.parameters();
  const table = database.dialect.table('DeadLetter');
  // Placeholders are bound in text order (SQLite's `?` are positional): the tenant, then the cursor.
  const tenant = bind(tenantId);
  const afterId = after ? ` AND "id" > ${bind(after)}` : '';
  return (await database.raw()).query<DeadLetterRow>(
    `SELECT ${COLUMNS} FROM ${table} WHERE "tenantId" = ${tenant}${afterId} ORDER BY "id" LIMIT ${bind(limit)}`,
    params,
  );
}

export async function deadLetterRow(database: Database, tenantId: string, id: string): Promise<DeadLetterRow | undefined> {
  const { params, bind } = database.dialect.parameters();
  const [row] = await (await database.raw()).query<DeadLetterRow>(
    `SELECT ${COLUMNS} FROM ${database.dialect.table('DeadLetter')} WHERE "tenantId" = ${bind(tenantId)} AND "id" = ${bind(id)}`,
    params,
  );
  return row;
}

/** Deletes a dead letter; false when the tenant has none of that id. */
export async function deleteDeadLetter(database: Database, tenantId: string, id: string): Promise<boolean> {
  const { params, bind } = database.dialect.parameters();
  const removed = await (await database.raw()).execute(
    `DELETE FROM ${database.dialect.table('DeadLetter')} WHERE "tenantId" = ${bind(tenantId)} AND "id" = ${bind(id)}`,
    params,
  );
  return removed > 0;
}
