import { dbTarget } from './db';

// Helpers for the raw SQL that hot paths send through Prisma on either provider.

/** Whether this process's database is PostgreSQL (else the embedded SQLite). */
export function isPostgres(): boolean {
  return dbTarget().provider === 'postgres';
}

/** A table name for raw SQL: PostgreSQL raw queries do not get the client's schema, so it is spelled out. */
export function tableName(table: string): string {
  const target = dbTarget();
  return target.provider === 'postgres' ? `"${target.schema.replace(/"/g, '""')}"."${table}"` : `"${table}"`;
}

/** Positional parameters for one statement: `$n` on PostgreSQL, `?` on SQLite (bound in text order). */
export function sqlParameters(): { params: unknown[]; bind: (value: unknown) => string } {
  const postgres = isPostgres();
  const params: unknown[] = [];
  return { params, bind: (value) => (params.push(value), postgres ? `$${params.length}` : '?') };
}
