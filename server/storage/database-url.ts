import { isAbsolute, resolve } from 'node:path';

export type DatabaseTarget = { provider: 'sqlite'; file: string } | { provider: 'postgres'; connectionString: string; schema: string };
export type PostgresTarget = Extract<DatabaseTarget, { provider: 'postgres' }>;

/** `file:` (or a bare path) means SQLite; `postgres://` / `postgresql://` means PostgreSQL, `?schema=` picks the schema. */
export function parseDatabaseUrl(url: string): DatabaseTarget {
  if (/^postgres(ql)?:\/\//.test(url)) {
    const parsed = new URL(url);
    const schema = parsed.searchParams.get('schema') ?? 'public';
    parsed.searchParams.delete('schema');
    return { provider: 'postgres', connectionString: parsed.toString(), schema };
  }
  const path = url.replace(/^file:/, '');
  return { provider: 'sqlite', file: isAbsolute(path) ? path : resolve(/*turbopackIgnore: true*/ process.cwd(), path) };
}
