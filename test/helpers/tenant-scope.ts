// Which of a SQL statement's table references name their tenant: the rule that lets the tenant-owned tables be
// distributed by tenant (docs/SCALING.md), checked over the statements a test captured from the drivers
// (test/unit/storage-tenant-filter.test.ts). A heuristic over the SQL the project writes and Prisma generates, not a
// SQL parser: a reference is scoped when, within its own statement or subquery (nested subqueries are theirs),
// its rows are filtered or written with a tenant id.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';

export type Model = { name: string; tenantColumn: boolean };

/** The models of prisma/models.prisma, and whether each has a `tenantId` column. */
export function models(): Model[] {
  const text = readFileSync(join(process.cwd(), 'prisma/models.prisma'), 'utf8');
  return [...text.matchAll(/^model (\w+) \{([^}]*)\}/gm)].map(([, name, body]) => ({ name, tenantColumn: /^\s+tenantId\s/m.test(body) }));
}

/**
 * Records the text of every statement this process sends to the database from now until `stop()`: on PostgreSQL
 * every pg client's queries (Prisma's adapter and the raw driver share the pool), on SQLite every statement prepared
 * on a better-sqlite3 connection (both prepare there; the raw driver caches, so each text once per connection).
 */
export function captureStatements(): { statements: Set<string>; stop(): void } {
  const statements = new Set<string>();
  const client = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const database = BetterSqlite3.prototype as unknown as { prepare: (sql: string) => unknown };
  const query = client.query;
  const prepare = database.prepare;
  client.query = function (this: unknown, ...args: unknown[]) {
    const [config] = args;
    const text = typeof config === 'string' ? config : (config as { text?: unknown } | null)?.text;
    if (typeof text === 'string') statements.add(text);
    return query.apply(this, args);
  };
  database.prepare = function (this: unknown, sql: string) {
    statements.add(sql);
    return prepare.call(this, sql);
  };
  return {
    statements,
    stop() {
      client.query = query;
      database.prepare = prepare;
    },
  };
}

/** One statement in one form for both databases: double-quoted names without their schema, one space between words. */
export function normalized(sql: string, names: readonly string[]): string {
  const table = names.join('|');
  return sql
    .replace(/`/g, '"')
    .replace(new RegExp(`"[^"]+"\\."(${table})"`, 'g'), '"$1"')
    .replace(/\s+/g, ' ')
    .trim();
}

/** `query`: the text of the (sub)query the reference is in, without its parentheses. */
export type Reference = { table: string; scoped: boolean; query: string };

const KEYWORDS = new Set([
  'where',
  'set',
  'on',
  'join',
  'left',
  'inner',
  'order',
  'group',
  'limit',
  'values',
  'select',
  'using',
  'returning',
  'as',
  'for',
  'default',
]);

/** Every reference of `tables` in the (normalized) statement, with whether it is scoped to a tenant. */
export function tableReferences(sql: string, tables: ReadonlySet<string>): Reference[] {
  const found: Reference[] = [];
  const pattern = /\b(FROM|JOIN|INTO|UPDATE)\s+"(\w+)"(?:\s+(?:AS\s+)?("?)(\w+)\3)?/gi;
  for (const match of sql.matchAll(pattern)) {
    const [whole, verb, table, , alias] = match;
    if (!tables.has(table)) continue;
    const named = alias && !KEYWORDS.has(alias.toLowerCase()) ? alias : undefined;
    const end = match.index + whole.length - (named ? 0 : (alias?.length ?? 0));
    const scope = ownScope(sql, end);
    const scoped = verb.toUpperCase() === 'INTO' ? insertsTenant(scope) : filtersTenant(scope, [table, named]);
    found.push({ table, scoped, query: sql.slice(queryStart(sql, match.index), end + closingParenthesis(sql, end)) });
  }
  return found;
}

/** The text after a reference up to the end of the (sub)query it belongs to, nested subqueries blanked. */
function ownScope(sql: string, from: number): string {
  let depth = 0;
  let out = '';
  let blankedFrom = -1;
  for (let i = from; i < sql.length; i++) {
    const c = sql[i];
    if (c === '(') {
      if (blankedFrom < 0 && /^\(\s*(SELECT|WITH)\b/i.test(sql.slice(i, i + 12))) blankedFrom = depth;
      depth++;
    } else if (c === ')') {
      if (depth === 0) break;
      depth--;
      if (depth === blankedFrom) {
        blankedFrom = -1;
        out += '()';
        continue;
      }
    }
    if (blankedFrom < 0) out += c;
  }
  return out;
}

/** Where the (sub)query around position `at` begins: after the first parenthesis before it left open, or 0. */
function queryStart(sql: string, at: number): number {
  let depth = 0;
  for (let i = at - 1; i >= 0; i--) {
    if (sql[i] === ')') depth++;
    else if (sql[i] === '(' && depth-- === 0) return i + 1;
  }
  return 0;
}

/** How far after `from` the (sub)query around it ends: its closing parenthesis, or the end of the statement. */
function closingParenthesis(sql: string, from: number): number {
  let depth = 0;
  for (let i = from; i < sql.length; i++) {
    if (sql[i] === '(') depth++;
    else if (sql[i] === ')' && depth-- === 0) return i - from;
  }
  return sql.length - from;
}

/** An INSERT's column list names the tenant. */
function insertsTenant(scope: string): boolean {
  const columns = /^\s*\(([^)]*)\)/.exec(scope);
  return columns?.[1].includes('"tenantId"') ?? false;
}

/** A condition on the tenant column of this reference (by its table name, its alias, or unqualified). */
function filtersTenant(scope: string, names: (string | undefined)[]): boolean {
  const qualifier = `(?:(?:${names
    .filter(Boolean)
    .map((n) => `"?${n}"?`)
    .join('|')})\\.)?`;
  const column = `(?<![\\w".])${qualifier}"tenantId"`;
  return [
    new RegExp(`${column}\\s*(=|IN\\b)`, 'i'),
    new RegExp(`=\\s*${column}`, 'i'),
    // A row value (`("tenantId", "partition") IN (VALUES …)`): the statement names each tenant it touches.
    new RegExp(`\\(\\s*${column}\\s*,[^()]*\\)\\s*IN\\b`, 'i'),
  ].some((test) => test.test(scope));
}
