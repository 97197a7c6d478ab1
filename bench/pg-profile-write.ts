// PostgreSQL profile import writes, measured alone (issue 14): one chunk of 5,000 rows a transaction, as the import
// commits them, through `INSERT … SELECT FROM unnest($2::bigint[], $3::text[]) ON CONFLICT` (the import's write until
// now) and through `COPY` into a temporary staging table + one `INSERT … SELECT … ON CONFLICT` from it. New rows
// first (a first import), then the same users again (every row a conflict: a re-import). A scratch schema, dropped after.
// Run: DATABASE_URL=postgres://postgres@127.0.0.1:5432/test node --import tsx bench/pg-profile-write.ts [rows]
import pg from 'pg';
import { copyFromStdin, copyTextField } from '../server/storage/pg-copy';

const ROWS = Number(process.argv[2] ?? 500_000);
const CHUNK = 5_000;
const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const schema = `bench_pgwrite_${process.pid}`;
const pool = new pg.Pool({ connectionString: url, max: 2 });
const table = `"${schema}"."Profile"`;
const upsert = `ON CONFLICT ("tenantId", "user") DO UPDATE SET "attributes" = excluded."attributes", "updatedAt" = excluded."updatedAt"`;

const attributes = (user: number) => JSON.stringify({ plan: user % 4 ? 'free' : 'pro', age: 18 + (user % 63), tz: 'Europe/Amsterdam' });

async function chunked(write: (client: pg.PoolClient, users: number[], texts: string[]) => Promise<void>): Promise<number> {
  const started = performance.now();
  for (let from = 0; from < ROWS; from += CHUNK) {
    const users = Array.from({ length: Math.min(CHUNK, ROWS - from) }, (_, i) => from + i);
    const texts = users.map(attributes);
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      await write(client, users, texts);
      await client.query('COMMIT');
    } finally {
      client.release();
    }
  }
  return performance.now() - started;
}

const viaUnnest = (tenant: string) => (client: pg.PoolClient, users: number[], texts: string[]) =>
  client
    .query(
      `INSERT INTO ${table} ("tenantId", "user", "attributes", "updatedAt") SELECT $1, u, a, CURRENT_TIMESTAMP FROM unnest($2::bigint[], $3::text[]) AS t(u, a) ${upsert}`,
      [tenant, users, texts],
    )
    .then(() => undefined);

const viaCopy = (tenant: string) => async (client: pg.PoolClient, users: number[], texts: string[]) => {
  await client.query(`CREATE TEMP TABLE IF NOT EXISTS profile_import_rows ("user" bigint, "attributes" text) ON COMMIT DELETE ROWS`);
  let data = '';
  for (let i = 0; i < users.length; i++) data += `${users[i]}\t${copyTextField(texts[i])}\n`;
  await copyFromStdin(client, `COPY profile_import_rows ("user", "attributes") FROM STDIN`, Buffer.from(data));
  await client.query(
    `INSERT INTO ${table} ("tenantId", "user", "attributes", "updatedAt") SELECT $1, "user", "attributes", CURRENT_TIMESTAMP FROM profile_import_rows ${upsert}`,
    [tenant],
  );
};

await pool.query(`CREATE SCHEMA "${schema}"`);
try {
  await pool.query(
    `CREATE TABLE ${table} ("tenantId" text NOT NULL, "user" bigint NOT NULL, "attributes" text NOT NULL, "updatedAt" timestamp(3) NOT NULL DEFAULT CURRENT_TIMESTAMP, PRIMARY KEY ("tenantId", "user"))`,
  );
  for (const [name, write] of [
    ['unnest', viaUnnest],
    ['copy', viaCopy],
    ['unnest', viaUnnest],
    ['copy', viaCopy],
  ] as const) {
    const tenant = `${name}-${Math.random().toString(36).slice(2)}`;
    const fresh = await chunked(write(tenant));
    const again = await chunked(write(tenant));
    const rate = (ms: number) => Math.round(ROWS / (ms / 1000)).toLocaleString('en-US');
    console.log(`${name.padEnd(6)} new rows ${rate(fresh)}/s (${Math.round(fresh)} ms), conflicting rows ${rate(again)}/s (${Math.round(again)} ms)`);
  }
} finally {
  await pool.query(`DROP SCHEMA "${schema}" CASCADE`);
  await pool.end();
}
