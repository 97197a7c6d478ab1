import { describe, expect, it } from 'vitest';
import { app } from '../../server/app';
import { spawn } from 'node:child_process';
import { AppError } from '../../server/errors';
import { appendEvents, ingest, MAX_EVENTS_PER_BATCH, parseEventBatch, partitionEvents } from '../../server/engine/ingest';
import { decodeEvents } from '../../server/engine/log-codec';
import { USER_BLOCK } from '../../server/engine/partitioning';
import { newId } from '../../server/ids';
import { db, database } from '../helpers/app-db';

const NOW = Date.UTC(2026, 0, 1, 12);

/** A user of id block `n`: a new tenant deals its users to partitions in blocks of USER_BLOCK ids (block n → n % P). */
const inBlock = (n: number, offset = 0) => n * USER_BLOCK + offset;

async function tenant(partitions: number): Promise<{ id: string; name: string }> {
  const id = newId('tn');
  await db().tenant.create({ data: { id, name: id.toLowerCase().replace(/[^a-z0-9]/g, 'x'), partitions } });
  return (await db().tenant.findUniqueOrThrow({ where: { id } })) as { id: string; name: string };
}

function refusal(body: unknown): AppError {
  try {
    parseEventBatch(body, NOW);
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    return error as AppError;
  }
  throw new Error('the batch was accepted');
}

async function logRows(tenantId: string) {
  return db().eventLog.findMany({ where: { tenantId }, orderBy: [{ partition: 'asc' }, { offset: 'asc' }] });
}

describe('event batch validation', () => {
  it('normalizes events: default data {}, time from ISO, epoch ms, or now', () => {
    const batch = parseEventBatch(
      {
        events: [
          { user: 0, type: 'a' },
          { user: 4294967295, type: 'b', data: { x: 1 }, time: '2026-01-02T03:04:05.678Z' },
          { user: 7, type: 'c', time: 1234 },
        ],
      },
      NOW,
    );
    expect(batch.events).toEqual([
      { user: 0, type: 'a', data: {}, time: NOW },
      { user: 4294967295, type: 'b', data: { x: 1 }, time: Date.UTC(2026, 0, 2, 3, 4, 5, 678) },
      { user: 7, type: 'c', data: {}, time: 1234 },
    ]);
    expect(parseEventBatch({ tenant: 'acme', events: [{ user: 1, type: 't', time: '2026-01-02T03:04:05+02:00' }] }, NOW)).toEqual({
      tenant: 'acme',
      events: [{ user: 1, type: 't', data: {}, time: Date.UTC(2026, 0, 2, 1, 4, 5) }],
    });
  });

  it('names the FIRST bad index and field of a batch', () => {
    const good = { user: 1, type: 'click' };
    const cases: [unknown, RegExp][] = [
      [[good, good, { user: -1, type: 'x' }, { user: 'bad' }], /^events\[2\]\.user: .*0 to 4294967295.*-1/],
      [[good, { user: 4294967296, type: 'x' }], /^events\[1\]\.user: /],
      [[{ user: 1.5, type: 'x' }], /^events\[0\]\.user: /],
      [[good, { user: '12', type: 'x' }], /^events\[1\]\.user: .*the string "12"/],
      [[good, good, good, { user: 3 }], /^events\[3\]\.type: /],
      [[{ user: 3, type: '' }], /^events\[0\]\.type: /],
      [[{ user: 3, type: 'x'.repeat(129) }], /^events\[0\]\.type: .*128/],
      [[{ user: 3, type: 'x', data: [1] }], /^events\[0\]\.data: expected an object, got an array/],
      [[{ user: 3, type: 'x', data: 'nope' }], /^events\[0\]\.data: /],
      [[{ user: 3, type: 'x', time: 'yesterday' }], /^events\[0\]\.time: /],
      [[{ user: 3, type: 'x', time: '2026-01-02T03:04:05' }], /^events\[0\]\.time: .*time zone/],
      [[{ user: 3, type: 'x', time: -5 }], /^events\[0\]\.time: /],
      [[good, { user: 3, type: 'x', colour: 'red' }], /^events\[1\]\.colour: unknown field/],
      [[good, null], /^events\[1\]: expected an object/],
    ];
    for (const [events, message] of cases) {
      const error = refusal({ events });
      expect(error.code).toBe('validation_failed');
      expect(error.status).toBe(400);
      expect(error.message).toMatch(message);
    }
  });

  it('refuses bodies that are not a batch, an empty batch and one over the limit', () => {
    expect(refusal([]).message).toMatch(/^body: /);
    expect(refusal({}).message).toMatch(/^events: expected an array/);
    expect(refusal({ events: [] }).message).toMatch(/^events: the batch is empty/);
    expect(refusal({ events: [], extra: 1 }).message).toMatch(/^extra: unknown field/);
    expect(refusal({ tenant: 5, events: [{ user: 1, type: 'x' }] }).message).toMatch(/^tenant: /);
    const oversized = Array.from({ length: MAX_EVENTS_PER_BATCH + 1 }, (_, user) => ({ user, type: 'x' }));
    const error = refusal({ events: oversized });
    expect(error.status).toBe(400);
    expect(error.message).toMatch(/^events\[10000\]: a batch holds at most 10000 events; this one has 10001/);
    expect(parseEventBatch({ events: oversized.slice(0, MAX_EVENTS_PER_BATCH) }, NOW).events).toHaveLength(MAX_EVENTS_PER_BATCH);
  });
});

describe('appending to the partitioned log', () => {
  it('groups a batch by block of user ids (block b → partition b % P), keeping the order within each partition', () => {
    const users = [inBlock(5), inBlock(2, 7), inBlock(9, 255), inBlock(4), inBlock(1, 1), inBlock(6), inBlock(5, 3)];
    const events = users.map((user, i) => ({ user, type: `e${i}`, data: {}, time: NOW }));
    const groups = partitionEvents(events, { partitions: 4, userBlock: USER_BLOCK });
    expect([...groups.keys()].sort()).toEqual([0, 1, 2]);
    expect(groups.get(1)!.map((e) => e.user)).toEqual([inBlock(5), inBlock(9, 255), inBlock(1, 1), inBlock(5, 3)]);
    expect(groups.get(2)!.map((e) => e.user)).toEqual([inBlock(2, 7), inBlock(6)]);
    expect(groups.get(0)!.map((e) => e.user)).toEqual([inBlock(4)]);
    // A tenant made before blocks keeps user % P.
    expect([...partitionEvents(events, { partitions: 4, userBlock: 1 }).get(3)!].map((e) => e.user)).toEqual([inBlock(2, 7), inBlock(9, 255), inBlock(5, 3)]);
  });

  it('writes one row per touched partition per batch, offsets 1, 2, 3… per partition', async () => {
    const t = await tenant(4);
    const first = parseEventBatch(
      {
        events: [
          { user: inBlock(1), type: 'a', data: { n: 1 } },
          { user: inBlock(5), type: 'b' },
          { user: inBlock(2), type: 'c', time: 99 },
        ],
      },
      NOW,
    ).events;
    expect(await appendEvents(database(), app().state, t.id, first)).toBe(3);
    expect(await appendEvents(database(), app().state, t.id, parseEventBatch({ events: [{ user: inBlock(9), type: 'd' }] }, NOW).events)).toBe(1);
    const rows = await logRows(t.id);
    expect(rows.map((r) => [r.partition, Number(r.offset), r.count])).toEqual([
      [1, 1, 2],
      [1, 2, 1],
      [2, 1, 1],
    ]);
    expect(decodeEvents(rows[0].events)).toEqual([
      { user: inBlock(1), type: 'a', data: { n: 1 }, time: NOW },
      { user: inBlock(5), type: 'b', data: {}, time: NOW },
    ]);
    expect(decodeEvents(rows[2].events)).toEqual([{ user: inBlock(2), type: 'c', data: {}, time: 99 }]);
  });

  it('keeps offsets gap-free and unique under many concurrent batches, and tenants apart', async () => {
    const [a, b] = [await tenant(3), await tenant(3)];
    const batches = Array.from({ length: 30 }, (_, i) => Array.from({ length: 10 }, (_, j) => ({ user: inBlock(i * 10 + j), type: 'x', data: {}, time: NOW })));
    await Promise.all(batches.flatMap((events) => [appendEvents(database(), app().state, a.id, events), appendEvents(database(), app().state, b.id, events)]));
    for (const t of [a, b]) {
      const rows = await logRows(t.id);
      for (const partition of [0, 1, 2]) {
        const offsets = rows.filter((r) => r.partition === partition).map((r) => Number(r.offset));
        expect(offsets).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
      }
      const users = rows.flatMap((r) => decodeEvents(r.events).map((e) => e.user)).sort((x, y) => x - y);
      expect(users).toEqual(Array.from({ length: 300 }, (_, i) => inBlock(i)));
      // Group commit keeps one row per batch and partition, in arrival order: batch i is at offset i + 1.
      for (const row of rows) {
        const batch = Number(row.offset) - 1;
        for (const event of decodeEvents(row.events)) expect(Math.floor(event.user / USER_BLOCK / 10)).toBe(batch);
      }
    }
  });

  it('resolves the tenant from the key or from `tenant` with the admin token', async () => {
    const t = await tenant(2);
    const events = [{ user: 3, type: 'x' }];
    const appended = { tenantId: t.id, accepted: 1, duplicates: 0, replayed: false };
    expect(await ingest(database(), app().state, { kind: 'tenant', tenantId: t.id, keyId: 'k' }, { events }, NOW)).toEqual(appended);
    expect(await ingest(database(), app().state, { kind: 'admin' }, { tenant: t.name, events }, NOW)).toEqual(appended);
    await expect(ingest(database(), app().state, { kind: 'admin' }, { events }, NOW)).rejects.toMatchObject({
      code: 'validation_failed',
      message: /^tenant: required/,
    });
    const other = await tenant(2);
    await expect(ingest(database(), app().state, { kind: 'tenant', tenantId: t.id, keyId: 'k' }, { tenant: other.id, events }, NOW)).rejects.toMatchObject({
      code: 'validation_failed',
      message: `tenant: unknown tenant "${other.id}"`,
    });
    await expect(ingest(database(), app().state, { kind: 'admin' }, { tenant: 'no-such-tenant', events }, NOW)).rejects.toMatchObject({
      code: 'validation_failed',
      message: 'tenant: unknown tenant "no-such-tenant"',
    });
    expect(await logRows(other.id)).toEqual([]);
    expect((await logRows(t.id)).map((r) => Number(r.offset))).toEqual([1, 2]);
  });
});

describe('several processes appending to one tenant', () => {
  it('keeps offsets gap-free and unique: a writer that loses an offset race retries', async () => {
    const t = await tenant(2);
    const ingestModule = new URL('../../server/engine/ingest.ts', import.meta.url).href;
    // Each child is a separate process with its own client, so only the database arbitrates between them.
    const writer = (id: number) => `
      const { appendEvents } = await import(${JSON.stringify(ingestModule)});
      const { registerApp } = await import(${JSON.stringify(new URL('../../server/app.ts', import.meta.url).href)});
      const { createApp } = await import(${JSON.stringify(new URL('../../server/create-app.ts', import.meta.url).href)});
      const built = createApp();
      registerApp(built);
      for (let b = 0; b < 40; b++) {
        await appendEvents(built.database, built.state, ${JSON.stringify(t.id)}, [0, 1].map((p) => ({ user: (${id} * 1000 + b * 2 + p) * ${USER_BLOCK}, type: 'w${id}', data: {}, time: 0 })));
      }
      await built.close();`;
    const run = (id: number) =>
      new Promise<void>((resolve, reject) => {
        const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', writer(id)], {
          env: process.env,
          stdio: ['ignore', 'inherit', 'pipe'],
        });
        let stderr = '';
        child.stderr.on('data', (d) => (stderr += d));
        child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`writer ${id} exited ${code}: ${stderr}`))));
      });
    await Promise.all([run(1), run(2), run(3)]);
    const rows = await logRows(t.id);
    for (const partition of [0, 1]) {
      expect(rows.filter((r) => r.partition === partition).map((r) => Number(r.offset))).toEqual(Array.from({ length: 120 }, (_, i) => i + 1));
    }
    for (const id of [1, 2, 3]) {
      // Each writer's own batches stay in its order within a partition.
      const mine = rows.filter((r) => r.partition === 0).flatMap((r) => decodeEvents(r.events).filter((e) => e.type === `w${id}`));
      expect(mine.map((e) => e.user)).toEqual(Array.from({ length: 40 }, (_, b) => inBlock(id * 1000 + b * 2)));
    }
  }, 120_000);
});
