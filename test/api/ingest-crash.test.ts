import { isDeepStrictEqual } from 'node:util';
import { afterAll, expect, it } from 'vitest';
import { RoaringBitmap32 } from '../../server/crowd/bitmap';
import { decodeEvents } from '../../server/engine/log-codec';
import { applyMigrations } from '../../server/storage/migrate';
import { parseDatabaseUrl } from '../../server/storage/database-url';
import { crashBatches, CRASH_SEED, CRASH_USERS, crashWorkflow, seeded } from '../fixtures/engine/crash-events';
import { spawnServer, type SpawnedServer } from '../helpers/next-server';
import { serverSql } from '../helpers/server-db';
import { createTestDatabase } from '../helpers/test-database';
import { waitFor } from '../helpers/wait-for';

// A real server process (server/main.ts) is SIGKILLed at seeded random moments while a client posts the crash batches, each with
// an Idempotency-Key and an id on every event, and resends every batch that got no 202 (what every integration
// does). Batches committed just before a kill, whose 202 was lost, come back as retries: with the dedupe records in
// the same transaction as the log append, the log must hold every batch exactly once, and the journal and counts
// must equal an uninterrupted run of the same batches on another tenant of the same server.
/** Kills in `npm test`; `npm run soak` runs 20 (INGEST_CRASH_KILLS). */
const KILLS = Number(process.env.INGEST_CRASH_KILLS ?? 3);
const ADMIN_TOKEN = 'crash-admin-token-0123456789abcdef';
const PARTITIONS = 3;
/** A server restarted after SIGKILL on a loaded 2-core machine may take a while to apply its log again. */
const PATIENCE = { timeoutMs: 120_000 };

const database = createTestDatabase(process.env.CROWDFLOW_TEST_PROVIDER ?? 'sqlite', 'ingest_crash');
let server: SpawnedServer | undefined;
afterAll(async () => {
  server?.child.kill('SIGKILL');
  await server?.exited;
  await database.drop();
});

async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Response> {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  const type = typeof body === 'string' ? 'text/plain' : 'application/json';
  return fetch(`${server!.baseUrl}/api/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body === undefined ? {} : { 'content-type': type }), ...headers },
    body: body === undefined ? undefined : text,
  });
}

async function expectOk<T>(response: Promise<Response>): Promise<T> {
  const answer = await response;
  const text = await answer.text();
  expect(answer.status, text).toBeLessThan(300);
  return JSON.parse(text) as T;
}

async function tenantWithInstance(name: string): Promise<{ tenantId: string; instanceId: string }> {
  const { id: tenantId } = await expectOk<{ id: string }>(call('POST', '/tenants', { name, partitions: PARTITIONS }));
  const ids = Array.from({ length: CRASH_USERS }, (_, i) => i + 1).join('\n');
  await expectOk(call('PUT', `/tenants/${name}/crowds/crowd`, ids));
  const { id: workflowId } = await expectOk<{ id: string }>(call('POST', `/tenants/${name}/workflows`, { name: 'crash', definition: crashWorkflow }));
  const { instanceId } = await expectOk<{ instanceId: string }>(call('POST', `/tenants/${name}/workflows/${workflowId}/start`, { crowd: 'crowd' }));
  await waitFor(
    'instance running',
    async () => (await expectOk<{ state: string }>(call('GET', `/tenants/${name}/instances/${instanceId}`))).state === 'running',
    Boolean,
    PATIENCE,
  );
  return { tenantId, instanceId };
}

const sql = <T>(text: string, params: unknown[]) => serverSql<T>(text, params, { databaseUrl: database.url });
const body = (tenant: string, batch: number) => ({ tenant, events: crashBatches()[batch].map((event, i) => ({ id: `b${batch}-e${i}`, ...event })) });

/** Until every logged row of the tenant is applied by its partition. */
async function drained(tenantId: string): Promise<boolean> {
  const logged = await sql<{ partition: number; last: number }>(
    'SELECT "partition", MAX("offset") AS "last" FROM "EventLog" WHERE "tenantId" = $1 GROUP BY "partition"',
    [tenantId],
  );
  const applied = await sql<{ partition: number; offset: number }>('SELECT "partition", "offset" FROM "PartitionState" WHERE "tenantId" = $1', [tenantId]);
  return logged.every((row) => applied.some((state) => Number(state.partition) === Number(row.partition) && Number(state.offset) === Number(row.last)));
}

async function journalOf(instanceId: string) {
  const rows = await sql<Record<string, unknown>>('SELECT * FROM "Journal" WHERE "instanceId" = $1 ORDER BY "seq"', [instanceId]);
  const byPartition = new Map<number, string[]>();
  for (const r of rows) {
    const users = r.bitmap
      ? RoaringBitmap32.deserialize(r.bitmap as Uint8Array, 'portable')
          .toArray()
          .join(' ')
      : String(r.user);
    const list = byPartition.get(Number(r.partition)) ?? [];
    list.push(`${r.fromStep}->${r.toStep} [${users}] x${r.count} ${r.leaveAction}/${r.enterAction}`);
    byPartition.set(Number(r.partition), list);
  }
  return [...byPartition.entries()].sort(([a], [b]) => a - b);
}

// A hang guard, not a goal: a restart after a kill on a loaded 2-core machine may take a while to apply its log again.
it('a client retrying through SIGKILLs of the server gets every batch logged exactly once: journal and counts as without kills', {
  timeout: 240_000 + KILLS * 20_000,
}, async () => {
  await applyMigrations(parseDatabaseUrl(database.url));
  server = await spawnServer(database.url, ADMIN_TOKEN);
  const crashed = await tenantWithInstance('crashed');
  const reference = await tenantWithInstance('reference');
  const batches = crashBatches();

  const random = seeded(CRASH_SEED ^ 0x5eed);
  let kills = 0;
  let acksUntilKill = 1 + Math.floor(random() * 12);
  let roundTripMs = 20; // a moving average: kills are aimed inside a request, from parsing to the 202
  let replays = 0;
  let retries = 0;
  for (let batch = 0; batch < batches.length; ) {
    if (kills < KILLS && acksUntilKill === 0) {
      kills++;
      acksUntilKill = 1 + Math.floor(random() * 12);
      const child = server.child;
      setTimeout(() => child.kill('SIGKILL'), (0.4 + 0.8 * random()) * roundTripMs);
    }
    const sent = performance.now();
    let answer: Response;
    let answered: unknown;
    try {
      answer = await call('POST', '/events', body('crashed', batch), { 'idempotency-key': `batch-${batch}` });
      if (answer.status !== 202) throw new Error(`status ${answer.status}: ${await answer.text()}`);
      answered = await answer.json();
    } catch (error) {
      // No 202: the server was killed before answering (the batch may or may not be in). Resend to the next server.
      const killed = await Promise.race([server.exited.then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 10_000))]);
      if (!killed) throw error;
      retries++;
      server = await spawnServer(database.url, ADMIN_TOKEN);
      continue;
    }
    roundTripMs = 0.8 * roundTripMs + 0.2 * (performance.now() - sent);
    expect(answered).toEqual({ accepted: batches[batch].length });
    if (answer.headers.get('idempotent-replayed') === 'true') replays++;
    batch++;
    acksUntilKill--;
  }
  expect(kills).toBe(KILLS);
  expect(retries).toBeGreaterThanOrEqual(KILLS - 1);

  // The log holds every batch exactly once (events carry their batch number).
  const perBatch = new Map<number, number>();
  for (const row of await sql<{ events: Uint8Array }>('SELECT "events" FROM "EventLog" WHERE "tenantId" = $1', [crashed.tenantId])) {
    for (const event of decodeEvents(row.events)) perBatch.set(Number(event.data.batch), (perBatch.get(Number(event.data.batch)) ?? 0) + 1);
  }
  expect([...perBatch.keys()].sort((a, b) => a - b)).toEqual(batches.map((_, i) => i));
  expect(new Set(perBatch.values())).toEqual(new Set([batches[0].length]));

  // The uninterrupted run: the same requests to another tenant of the last server.
  for (let batch = 0; batch < batches.length; batch++) {
    expect((await call('POST', '/events', body('reference', batch), { 'idempotency-key': `batch-${batch}` })).status).toBe(202);
  }
  await waitFor('crashed tenant applied', () => drained(crashed.tenantId), Boolean, PATIENCE);
  await waitFor('reference tenant applied', () => drained(reference.tenantId), Boolean, PATIENCE);
  // Drained is what the database says; the counts API answers from what the engine thread published after that
  // commit, a message later. So the counts are read until both tenants' agree (a real difference stays and fails).
  const counts = async (name: string, instanceId: string) => ({
    ...(await expectOk<{ total: number } & Record<string, unknown>>(call('GET', `/tenants/${name}/instances/${instanceId}/counts`))),
    instanceId: null,
  });
  const both = async () => ({ crashed: await counts('crashed', crashed.instanceId), reference: await counts('reference', reference.instanceId) });
  const published = await waitFor("both tenants' counts published", both, (c) => isDeepStrictEqual(c.crashed, c.reference), { timeoutMs: 10_000 }).catch(
    async () => both(),
  );
  const expected = published.reference;
  expect(published.crashed).toEqual(expected);
  expect(expected.total).toBe(CRASH_USERS);
  expect(await journalOf(crashed.instanceId)).toEqual(await journalOf(reference.instanceId));
  console.log(`ingest crash test: ${kills} kills, ${retries} resent batches, ${replays} answered as replays of a committed batch`);
});
