import { hostname } from 'node:os';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseDatabaseUrl } from '../../server/storage/database-url';
import { applyMigrations } from '../../server/storage/migrate';
import { spawnServer, type SpawnedServer } from '../helpers/next-server';
import { createTestDatabase, type TestDatabase } from '../helpers/test-database';
import { waitFor } from '../helpers/wait-for';

// Three real server processes (server/main.ts over the last build) on one PostgreSQL schema. A seeded run SIGKILLs,
// SIGTERMs and restarts members while a client posts events (retrying each batch with its Idempotency-Key until one
// member acknowledges it) and reads counts from random members. Every count read must be correct for some committed
// state (every user counted once, no more buyers than users sent a purchase) or an explicit 503 partition_moving; at
// the end the journal and the counts on every member equal a single-process run: each user sent a purchase moved
// to `bought` exactly once.

const TOKEN = 'cluster-admin-token-0123456789abcdef';
const PARTITIONS = 8;
const USERS = 400;
const BATCH = 20;
const SEED = 17;

const workflow = {
  steps: [
    {
      name: 'waiting',
      kind: 'branch',
      branches: [
        { condition: 'event.type == "purchase"', next: 'bought' },
        { condition: 'true', next: 'other' },
      ],
    },
    { name: 'bought', kind: 'direct' },
    { name: 'other', kind: 'direct' },
  ],
};

/** mulberry32: the same chaos every run. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Member = { server: SpawnedServer; name: string; alive: boolean };
type Reply = { status: number; body: any };

async function call(member: Member, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Reply> {
  try {
    const json = body !== undefined && typeof body !== 'string';
    const response = await fetch(`${member.server.baseUrl}/api/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${TOKEN}`, ...(json ? { 'content-type': 'application/json' } : {}), ...headers },
      body: body === undefined ? undefined : json ? JSON.stringify(body) : (body as string),
      signal: AbortSignal.timeout(15_000),
    });
    const text = await response.text();
    return { status: response.status, body: text && (response.headers.get('content-type') ?? '').includes('json') ? JSON.parse(text) : text };
  } catch {
    return { status: 0, body: null }; // the member is down (killed, or stopping)
  }
}

async function startMember(url: string): Promise<Member> {
  const server = await spawnServer(url, TOKEN);
  return { server, name: `${hostname()}:${server.child.pid}`, alive: true };
}

/** The probe's first answer that is not undefined. */
async function found<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  return (await waitFor(what, probe, (answer) => answer !== undefined, { timeoutMs, everyMs: 20 })) as T;
}

describe('a cluster of three members on one PostgreSQL schema', () => {
  let database: TestDatabase;
  let sql: pg.Client;
  const members: Member[] = [];
  let schema: string;

  beforeAll(async () => {
    database = createTestDatabase('postgres', 'cluster');
    const target = parseDatabaseUrl(database.url);
    if (target.provider !== 'postgres') throw new Error('the cluster runs on PostgreSQL');
    schema = target.schema;
    await applyMigrations(target);
    sql = new pg.Client({ connectionString: target.connectionString });
    await sql.connect();
    members.push(...(await Promise.all([0, 1, 2].map(() => startMember(database.url)))));
  }, 180_000);

  afterAll(async () => {
    for (const m of members) if (/\b500\b|Error/.test(m.server.log())) console.warn(`[member ${m.name} log]\n${m.server.log().slice(-4000)}`);
    for (const m of members) if (m.server.child.exitCode === null) m.server.child.kill('SIGKILL');
    await sql?.end();
    await database?.drop();
  });

  /** Owner of each partition of the tenant (null: released). */
  async function owners(tenantId: string): Promise<(string | null)[]> {
    const { rows } = await sql.query<{ partition: number; owner: string | null }>(
      `SELECT "partition", "owner" FROM "${schema}"."PartitionState" WHERE "tenantId" = $1 ORDER BY "partition"`,
      [tenantId],
    );
    return rows.map((r) => r.owner);
  }

  /** Resolves once every partition is held by a live member and none holds more than ceil(8 / live members). */
  async function balanced(tenantId: string, timeoutMs = 30_000): Promise<number> {
    const started = Date.now();
    await found(
      'balanced ownership',
      async () => {
        const live = members.filter((m) => m.alive).map((m) => m.name);
        const held = await owners(tenantId);
        const cap = Math.ceil(PARTITIONS / live.length);
        const ok = held.length === PARTITIONS && held.every((o) => o && live.includes(o)) && live.every((m) => held.filter((o) => o === m).length <= cap);
        return ok ? true : undefined;
      },
      timeoutMs,
    );
    return Date.now() - started;
  }

  it('spreads partitions, survives SIGKILL, SIGTERM and joins, and ends equal to a single-process run', async () => {
    const random = seeded(SEED);
    const live = () => members.filter((m) => m.alive);
    const any = () => live()[Math.floor(random() * live().length)];
    const first = members[0];

    const tenant = await call(first, 'POST', '/tenants', { name: 'acme', partitions: PARTITIONS });
    expect(tenant.status, JSON.stringify(tenant.body)).toBe(201);
    const tenantId: string = tenant.body.id;
    const users = Array.from({ length: USERS }, (_, i) => i + 1);
    const crowd = await call(first, 'PUT', '/tenants/acme/crowds/everyone', users.join('\n'), { 'content-type': 'text/plain' });
    expect(crowd.status, JSON.stringify(crowd.body)).toBeLessThan(300);
    const created = await call(members[1], 'POST', '/tenants/acme/workflows', { name: 'buyers', definition: workflow });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    await balanced(tenantId);

    // An instance operation spanning partitions of all three members completes as one procedure.
    const started = await call(members[2], 'POST', `/tenants/acme/workflows/${created.body.id}/start`, { crowd: 'everyone' });
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    const instanceId: string = started.body.instanceId;
    await found('the instance running', async () =>
      (await call(any(), 'GET', `/tenants/acme/instances/${instanceId}`)).body?.state === 'running' ? true : undefined,
    );
    await balanced(tenantId);

    const sent = new Set<number>();
    let moving = 0;
    let reads = 0;
    const readCounts = async () => {
      const member = any();
      const counts = await call(member, 'GET', `/tenants/acme/instances/${instanceId}/counts`);
      if (counts.status === 0) return;
      reads++;
      if (counts.status === 503) {
        expect(counts.body.error.code).toBe('partition_moving');
        moving++;
        return;
      }
      expect(counts.status, JSON.stringify(counts.body)).toBe(200);
      expect(counts.body.total, `counts on ${member.name}: ${JSON.stringify(counts.body)}`).toBe(USERS);
      expect(counts.body.steps.waiting + counts.body.steps.bought).toBe(USERS);
      expect(counts.body.steps.bought).toBeLessThanOrEqual(sent.size);
    };
    const post = async (batch: number) => {
      const chunk = users.slice(batch * BATCH, (batch + 1) * BATCH);
      for (const user of chunk) sent.add(user);
      const events = chunk.map((user) => ({ user, type: 'purchase' }));
      await found(`batch ${batch} acknowledged`, async () => {
        const reply = await call(any(), 'POST', '/events', { tenant: 'acme', events }, { 'idempotency-key': `batch-${batch}` });
        return reply.status === 202 ? true : undefined;
      });
    };

    const takeovers: Record<string, number> = {};
    const batches = USERS / BATCH;
    for (let batch = 0; batch < batches; batch++) {
      await post(batch);
      await readCounts();
      await readCounts();
      if (batch === 4) {
        // SIGKILL: the others take its partitions over once PostgreSQL drops its connection (and its lock).
        const victim = live()[Math.floor(random() * live().length)];
        victim.server.child.kill('SIGKILL');
        victim.alive = false;
        takeovers.sigkill = await balanced(tenantId);
      }
      if (batch === 8) {
        const joined = await startMember(database.url);
        members.push(joined);
        takeovers.join = await balanced(tenantId);
      }
      if (batch === 13) {
        const leaving = live()[Math.floor(random() * live().length)];
        leaving.alive = false;
        leaving.server.child.kill('SIGTERM');
        takeovers.sigterm = await balanced(tenantId);
        await leaving.server.exited;
      }
    }
    console.log(`[cluster] takeover ms ${JSON.stringify(takeovers)}; count reads ${reads}, of which 503 partition_moving ${moving}`);

    // Every member ends on the counts of a single-process run.
    for (const member of live()) {
      let last: Reply | undefined;
      await found(`final counts on ${member.name} (last: ${JSON.stringify(last?.body)})`, async () => {
        last = await call(member, 'GET', `/tenants/acme/instances/${instanceId}/counts`);
        return last.status === 200 && last.body.steps.bought === USERS ? true : undefined;
      }).catch(async (error) => {
        const journal = await sql.query(`SELECT COUNT(*) AS n FROM "${schema}"."Journal" WHERE "instanceId" = $1 AND "toStep" = 'bought'`, [instanceId]);
        const state = await sql.query(`SELECT * FROM "${schema}"."PartitionState" WHERE "tenantId" = $1 ORDER BY "partition"`, [tenantId]);
        const figures = await sql.query(`SELECT "partition", "epoch", "version", "counts" FROM "${schema}"."ShardCounts" ORDER BY "partition"`);
        throw new Error(
          `${error.message}; last ${JSON.stringify(last?.body)}; journal bought ${JSON.stringify(journal.rows)}; state ` +
            `${JSON.stringify(state.rows)}; figures ${JSON.stringify(figures.rows)}; members ${JSON.stringify(live().map((m) => m.name))}`,
        );
      });
    }
    // Counts are published after each commit, but may already include a batch whose commit is in flight: wait for it.
    const rows = await found(
      'every move in the journal',
      async () => {
        const { rows } = await sql.query<{ user: string; moves: string }>(
          `SELECT "user", COUNT(*) AS "moves" FROM "${schema}"."Journal" WHERE "instanceId" = $1 AND "toStep" = 'bought' GROUP BY "user"`,
          [instanceId],
        );
        return rows.length >= USERS ? rows : undefined;
      },
      10_000,
    ).catch(
      async () =>
        (
          await sql.query<{ user: string; moves: string }>(
            `SELECT "user", COUNT(*) AS "moves" FROM "${schema}"."Journal" WHERE "instanceId" = $1 AND "toStep" = 'bought' GROUP BY "user"`,
            [instanceId],
          )
        ).rows,
    );
    const missing = users.filter((u) => !rows.some((r) => Number(r.user) === u));
    const detail = await sql.query(
      `SELECT "seq", "user", "partition", "fromStep", "toStep", "count", "user" IS NULL AS bulk FROM "${schema}"."Journal" WHERE ` +
        `"instanceId" = $1 AND ("user" = ANY($2) OR "user" IS NULL) ORDER BY "seq"`,
      [instanceId, missing.slice(0, 10)],
    );
    expect(
      rows.length,
      `missing ${JSON.stringify(missing)} (partitions ${JSON.stringify(missing.map((u) => u % PARTITIONS))}); journal ${JSON.stringify(detail.rows)}`,
    ).toBe(USERS);
    expect(rows.every((r) => Number(r.moves) === 1)).toBe(true);
    expect(new Set(rows.map((r) => Number(r.user)))).toEqual(new Set(users));
    // A revoked key stops working on every member at once (cluster notices clear their key caches).
    const key = await call(first.alive ? first : live()[0], 'POST', '/tenants/acme/keys', { name: 'short-lived', scopes: ['read'] });
    expect(key.status).toBe(201);
    const withKey = (member: Member) =>
      fetch(`${member.server.baseUrl}/api/v1/tenants/acme/instances/${instanceId}/counts`, { headers: { authorization: `Bearer ${key.body.secret}` } }).then(
        (r) => r.status,
      );
    for (const member of live()) expect(await withKey(member)).toBe(200);
    expect((await call(live()[0], 'DELETE', `/tenants/acme/keys/${key.body.id}`)).status).toBeLessThan(300);
    const revokedAt = Date.now();
    // Target 1 s; the bound leaves room for a loaded CI machine (the figure is printed).
    for (const member of live()) await found(`key revoked on ${member.name}`, async () => ((await withKey(member)) === 401 ? true : undefined), 15_000);
    console.log(`[cluster] revoked key refused by every member after ${Date.now() - revokedAt} ms`);
  }, 300_000);
});
