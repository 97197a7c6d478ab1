import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, baseUrl, createTenant, expectError } from '../helpers/api';

// Exports with profile columns, as CSV and as Parquet (issue 38 §1). The Parquet file is read back by DuckDB, a reader
// that shares no code with the writer (arrow-rs through parquet-wasm), and compared row by row with the CSV.

const USERS = 150_000; // more than one Parquet row group (131,072 rows)
const WITHOUT_PROFILE = [200_000, 200_001, 200_002];
const COLUMNS = ['plan', 'age', 'score', 'optIn', 'seen', 'tags', 'address.city'];

function profileOf(user: number): Record<string, unknown> {
  const attributes: Record<string, unknown> = {
    plan: ['free', 'pro', 'team, "gold"'][user % 3],
    score: (user % 100) / 4,
    seen: `2026-0${1 + (user % 9)}-1${user % 10}T0${user % 10}:30:00Z`,
    tags: user % 7 === 0 ? 42 : `x${user % 13}`,
    address: { city: user % 2 ? 'Paris' : 'Lyon' },
  };
  if (user % 11 !== 0) attributes.age = 18 + (user % 60);
  if (user % 5 !== 0) attributes.optIn = user % 2 === 0;
  return attributes;
}

const quoted = (text: string) => (/[",\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text);

/** The line the CSV export must hold for `user`, from the profile the test wrote. */
function expectedLine(user: number): string {
  if (user >= USERS) return `${user}${','.repeat(COLUMNS.length)}`;
  const p = profileOf(user);
  const cells = [
    quoted(String(p.plan)),
    p.age === undefined ? '' : String(p.age),
    String(p.score),
    p.optIn === undefined ? '' : String(p.optIn),
    new Date(String(p.seen)).toISOString(),
    String(p.tags),
    String((p.address as { city: string }).city),
  ];
  return [user, ...cells].join(',');
}

async function download(path: string, token: string): Promise<{ status: number; bytes: Uint8Array; headers: Headers }> {
  const response = await fetch(`${baseUrl()}/api/v1${path}`, { headers: { authorization: `Bearer ${token}` } });
  return { status: response.status, bytes: new Uint8Array(await response.arrayBuffer()), headers: response.headers };
}

/** A DuckDB value as the CSV export writes it. */
function asCsvCell(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (value instanceof Date) return value.toISOString();
  return quoted(String(value));
}

describe('exports with profile columns', () => {
  let tenant: Awaited<ReturnType<typeof createTenant>>;
  let base: string;
  const folder = mkdtempSync(join(tmpdir(), 'crowdflow-parquet-'));
  let duck: Awaited<ReturnType<typeof DuckDBInstance.create>>;

  beforeAll(async () => {
    tenant = await createTenant(2);
    base = `/tenants/${tenant.name}`;
    const lines = Array.from({ length: USERS }, (_, user) => JSON.stringify({ user, attributes: profileOf(user) })).join('\n');
    const imported = await api('POST', `${base}/profiles/import`, { token: tenant.key, body: lines, headers: { 'content-type': 'application/x-ndjson' } });
    expect(imported.status, JSON.stringify(imported.body)).toBe(200);
    const ids = [...Array.from({ length: USERS }, (_, user) => user), ...WITHOUT_PROFILE].join('\n');
    expect((await api('PUT', `${base}/crowds/everyone`, { body: ids, headers: { 'content-type': 'text/plain' } })).status).toBe(201);
    duck = await DuckDBInstance.create(':memory:');
  }, 120_000);

  afterAll(() => {
    duck?.closeSync();
    rmSync(folder, { recursive: true, force: true });
  });

  async function query(sql: string): Promise<Record<string, unknown>[]> {
    const connection = await duck.connect();
    try {
      return (await connection.runAndReadAll(sql)).getRowObjectsJS();
    } finally {
      connection.closeSync();
    }
  }

  it('writes a header and every user with their attributes in CSV, and the same rows with typed columns in Parquet', async () => {
    const columns = COLUMNS.join(',');
    const csv = await download(`${base}/crowds/everyone/export?format=csv&columns=${encodeURIComponent(columns)}`, tenant.key);
    expect(csv.status).toBe(200);
    expect(csv.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(csv.headers.get('x-crowdflow-count')).toBe(String(USERS + WITHOUT_PROFILE.length));
    const lines = new TextDecoder().decode(csv.bytes).split('\n');
    expect(lines.pop()).toBe('');
    expect(lines[0]).toBe(`user,${columns}`);
    const everyone = [...Array.from({ length: USERS }, (_, user) => user), ...WITHOUT_PROFILE];
    expect(lines.slice(1)).toEqual(everyone.map(expectedLine));

    const parquet = await download(`${base}/crowds/everyone/export?format=parquet&columns=${encodeURIComponent(columns)}`, tenant.key);
    expect(parquet.status).toBe(200);
    expect(parquet.headers.get('content-type')).toBe('application/vnd.apache.parquet');
    expect(parquet.headers.get('content-disposition')).toBe('attachment; filename="everyone.parquet"');
    const file = join(folder, 'everyone.parquet');
    writeFileSync(file, parquet.bytes);

    const rows = await query(`SELECT * FROM read_parquet('${file}') ORDER BY "user"`);
    expect(rows.length).toBe(everyone.length);
    const fromParquet = rows.map((row) => ['user', ...COLUMNS].map((name) => asCsvCell(row[name])).join(','));
    expect(fromParquet).toEqual(lines.slice(1));

    const schema = await query(`SELECT name, type, logical_type::VARCHAR AS logical FROM parquet_schema('${file}') WHERE type IS NOT NULL`);
    const typeOf = Object.fromEntries(schema.map((column) => [column.name, `${column.type}${column.logical ? ` ${column.logical}` : ''}`]));
    expect(typeOf.user).toBe('INT64');
    expect(typeOf.age).toBe('INT64');
    expect(typeOf.score).toBe('DOUBLE');
    expect(typeOf.optIn).toBe('BOOLEAN');
    expect(typeOf.seen).toMatch(/^INT64 TimestampType\(isAdjustedToUTC=1, unit=TimeUnit\(MILLIS=MilliSeconds\(\),/);
    expect(typeOf.plan).toMatch(/^BYTE_ARRAY StringType/);
    expect(typeOf['address.city']).toMatch(/^BYTE_ARRAY StringType/);
    const chunks = await query(`SELECT row_group_id, path_in_schema, encodings FROM parquet_metadata('${file}')`);
    expect(new Set(chunks.map((chunk) => chunk.row_group_id)).size).toBe(2);
    for (const chunk of chunks.filter((c) => c.path_in_schema === 'plan')) expect(String(chunk.encodings)).toContain('RLE_DICTIONARY');
  }, 120_000);

  it('exports a step’s users with columns, and Parquet without columns as the user IDs', async () => {
    const definition = {
      steps: [
        { name: 'wait', kind: 'branch', branches: [{ condition: 'event.type == "buy"', next: 'done' }] },
        { name: 'done', kind: 'direct' },
      ],
    };
    const created = await api('POST', `${base}/workflows`, { body: { name: 'Columns', definition } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const instanceId: string = (await api('POST', `${base}/workflows/${created.body.id}/start`, { body: { crowd: 'everyone' } })).body.instanceId;
    await expect.poll(async () => (await api('GET', `${base}/instances/${instanceId}`)).body.state, { timeout: 20_000 }).toBe('running');
    const limited = await download(`${base}/instances/${instanceId}/steps/wait/export?columns=plan,age&limit=3`, tenant.key);
    expect(new TextDecoder().decode(limited.bytes)).toBe('user,plan,age\n0,free,\n1,pro,19\n2,"team, ""gold""",20\n');

    const ids = await download(`${base}/instances/${instanceId}/steps/wait/export?format=parquet`, tenant.key);
    expect(ids.status).toBe(200);
    expect(ids.headers.get('content-disposition')).toMatch(/^attachment; filename="columns-wait-\d{4}-\d{2}-\d{2}\.parquet"$/);
    const file = join(folder, 'wait.parquet');
    writeFileSync(file, ids.bytes);
    const [summary] = await query(`SELECT count(*) AS users, min("user") AS first, max("user") AS last FROM read_parquet('${file}')`);
    expect(summary).toEqual({ users: BigInt(USERS + WITHOUT_PROFILE.length), first: 0n, last: BigInt(WITHOUT_PROFILE.at(-1)!) });

    // The workflow has no goal: converted users cannot be asked of it, with columns or without.
    for (const query of ['users=converted', 'users=converted&columns=plan&format=parquet']) {
      const error = expectError(await api('GET', `${base}/instances/${instanceId}/steps/wait/export?${query}`, { token: tenant.key }), 422, 'unprocessable');
      expect(error.message).toContain('has no goal');
    }
  }, 60_000);

  it('refuses unknown columns, entered_at, and columns in formats that carry IDs only, naming them', async () => {
    const exported = (query: string) => api('GET', `${base}/crowds/everyone/export?${query}`, { token: tenant.key });
    const unknown = expectError(await exported('columns=plan,nope,zz.top'), 400, 'bad_request');
    expect(unknown.message).toBe('columns: unknown columns "nope", "zz.top": no profile of the tenant has that attribute');
    expect(unknown.details).toEqual({ path: 'columns', unknown: ['nope', 'zz.top'] });
    expect(expectError(await exported('columns=plan&format=roaring'), 400, 'bad_request').message).toContain('format=roaring carries user IDs only');
    expect(expectError(await exported('columns=plan&format=json'), 400, 'bad_request').message).toContain('format=json');
    expect(expectError(await exported('columns=plan,,age'), 400, 'bad_request').message).toContain('name 2 is empty');
    expect(expectError(await exported('columns=plan,plan'), 400, 'bad_request').message).toContain('"plan" named twice');
    expect(expectError(await exported('columns=entered_at'), 422, 'unprocessable').message).toContain('Column "entered_at"');
    expectError(await exported('format=xlsx'), 400, 'validation_failed');
  });
});
