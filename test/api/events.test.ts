import { describe, expect, it } from 'vitest';
import { api, createTenant, expectError } from '../helpers/api';
import { decodeEvents } from '../../server/engine/log-codec';
import { USER_BLOCK } from '../../server/engine/partitioning';
import { serverSql } from '../helpers/server-db';

type LogRow = { partition: number; offset: number; count: number; events: Uint8Array };

async function eventLog(tenantId: string): Promise<LogRow[]> {
  const rows = await serverSql<LogRow>('SELECT "partition", "offset", "count", "events" FROM "EventLog" WHERE "tenantId" = $1 ORDER BY "partition", "offset"', [
    tenantId,
  ]);
  return rows.map((r) => ({ ...r, partition: Number(r.partition), offset: Number(r.offset), count: Number(r.count) }));
}

/** A user of id block `n`: a tenant deals blocks of USER_BLOCK ids to its partitions round-robin (block n → n % P). */
const inBlock = (n: number) => n * USER_BLOCK;

const events = (n: number, from = 0) => Array.from({ length: n }, (_, i) => ({ user: inBlock(from + i), type: 'click', data: { i } }));

describe('POST /events', () => {
  it('appends a batch with a tenant API key: 202 {accepted}, one log row per partition, events as sent', async () => {
    const tenant = await createTenant(4);
    const sent = await api('POST', '/events', {
      token: tenant.key,
      body: { events: [...events(6), { user: inBlock(9), type: 'buy', time: '2026-03-01T10:00:00Z' }] },
    });
    expect(sent.status, JSON.stringify(sent.body)).toBe(202);
    expect(sent.body).toEqual({ accepted: 7 });
    const rows = await eventLog(tenant.id);
    expect(rows.map((r) => [r.partition, r.offset, r.count])).toEqual([
      [0, 1, 2],
      [1, 1, 3],
      [2, 1, 1],
      [3, 1, 1],
    ]);
    expect(decodeEvents(rows[1].events)).toMatchObject([
      { user: inBlock(1) },
      { user: inBlock(5) },
      { user: inBlock(9), type: 'buy', data: {}, time: Date.UTC(2026, 2, 1, 10) },
    ]);
    const again = await api('POST', '/events', { token: tenant.key, body: { events: events(1, 4) } });
    expect(again.status).toBe(202);
    expect((await eventLog(tenant.id)).filter((r) => r.partition === 0).map((r) => r.offset)).toEqual([1, 2]);
  });

  it('takes the tenant from the body with the admin token; an unknown tenant, or one the key may not see, is a 400 naming the field', async () => {
    const [a, b] = [await createTenant(2), await createTenant(2)];
    expect((await api('POST', '/events', { body: { tenant: a.name, events: events(2) } })).status).toBe(202);
    expect((await api('POST', '/events', { body: { tenant: b.id, events: events(2) } })).status).toBe(202);
    expect(expectError(await api('POST', '/events', { body: { events: events(2) } }), 400, 'validation_failed').message).toMatch(/^tenant: required/);
    expect(expectError(await api('POST', '/events', { body: { tenant: 'no-such-tenant', events: events(2) } }), 400, 'validation_failed').message).toMatch(
      /^tenant: unknown tenant "no-such-tenant"/,
    );
    expect(expectError(await api('POST', '/events', { token: a.key, body: { tenant: b.name, events: events(2) } }), 400, 'validation_failed').message).toMatch(
      /^tenant: unknown tenant/,
    );
    expect((await api('POST', '/events', { token: a.key, body: { tenant: a.name, events: events(1) } })).status).toBe(202);
    expect((await eventLog(a.id)).reduce((n, r) => n + r.count, 0)).toBe(3);
    expect((await eventLog(b.id)).reduce((n, r) => n + r.count, 0)).toBe(2);
  });

  it('refuses a bad batch whole with a 400 naming the first bad index, and appends nothing of it', async () => {
    const tenant = await createTenant(4);
    const post = (body: unknown) => api('POST', '/events', { token: tenant.key, body });
    const badAt = (index: number, bad: object) => {
      const batch: object[] = events(30);
      batch[index] = bad;
      batch[index + 3] = { user: -5, type: 'later' }; // a later problem must not be the one reported
      return { events: batch };
    };
    const cases: [unknown, RegExp][] = [
      [badAt(17, { user: -1, type: 'x' }), /^events\[17\]\.user: /],
      [badAt(3, { user: 4294967296, type: 'x' }), /^events\[3\]\.user: /],
      [badAt(5, { user: '42', type: 'x' }), /^events\[5\]\.user: .*string/],
      [badAt(0, { user: 1.25, type: 'x' }), /^events\[0\]\.user: /],
      [badAt(8, { user: 1, type: 7 }), /^events\[8\]\.type: /],
      [badAt(9, { user: 1 }), /^events\[9\]\.type: /],
      [badAt(11, { user: 1, type: 'x', data: [1, 2] }), /^events\[11\]\.data: /],
      [badAt(12, { user: 1, type: 'x', time: 'not a time' }), /^events\[12\]\.time: /],
      [badAt(13, { user: 1, type: 'x', extra: true }), /^events\[13\]\.extra: unknown field/],
      [{ events: events(10_001) }, /^events\[10000\]: a batch holds at most 10000 events/],
      [{ events: 'all of them' }, /^events: expected an array/],
      [{ events: [] }, /^events: the batch is empty/],
    ];
    for (const [body, message] of cases) {
      const error = expectError(await post(body), 400, 'validation_failed');
      expect(error.message).toMatch(message);
    }
    expectError(
      await api('POST', '/events', { token: tenant.key, body: '{"events": [{"user": 1, "type": "x"}', headers: { 'content-type': 'application/json' } }),
      400,
      'invalid_json',
    );
    expectError(await api('POST', '/events', { token: tenant.key, body: 'user=1', headers: { 'content-type': 'text/plain' } }), 415, 'unsupported_media_type');
    expectError(await api('POST', '/events', { token: null, body: { events: events(1) } }), 401, 'unauthorized');
    expect(await eventLog(tenant.id)).toEqual([]);
    // The largest allowed batch goes through.
    expect((await post({ events: events(10_000) })).body).toEqual({ accepted: 10_000 });
    expect((await eventLog(tenant.id)).reduce((n, r) => n + r.count, 0)).toBe(10_000);
  });

  it('keeps per-partition offsets gap-free under concurrent batches', async () => {
    const tenant = await createTenant(3);
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) => api('POST', '/events', { token: tenant.key, body: { events: events(30, i * 30) } })),
    );
    expect(results.map((r) => r.status)).toEqual(Array(12).fill(202));
    const rows = await eventLog(tenant.id);
    for (const partition of [0, 1, 2]) {
      expect(rows.filter((r) => r.partition === partition).map((r) => r.offset)).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
    }
    const users = rows.flatMap((r) => decodeEvents(r.events).map((e) => e.user)).sort((x, y) => x - y);
    expect(users).toEqual(Array.from({ length: 360 }, (_, i) => inBlock(i)));
  });
});

describe('ingest throughput', () => {
  it('accepts 100 HTTP batches of 1,000 events, 4 in flight, every event logged once (prints events/s)', async () => {
    const tenant = await createTenant(8);
    const bodies = Array.from({ length: 10 }, (_, b) =>
      JSON.stringify({
        events: Array.from({ length: 1000 }, (_, i) => ({
          user: inBlock(b * 1000 + i),
          type: i % 3 ? 'click' : 'buy',
          data: { page: `/p/${i % 50}`, amount: i % 100 },
        })),
      }),
    );
    const batches = 100;
    let next = 0;
    let accepted = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (next < batches) {
          const body = bodies[next++ % bodies.length];
          const result = await api('POST', '/events', { token: tenant.key, body, headers: { 'content-type': 'application/json' } });
          expect(result.status, JSON.stringify(result.body)).toBe(202);
          accepted += result.body.accepted;
        }
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    console.log(`[ingest] ${accepted} events in ${batches} HTTP batches of 1,000: ${Math.round(accepted / seconds)} events/s (${seconds.toFixed(2)} s)`);
    expect(accepted).toBe(100_000);
    const rows = await eventLog(tenant.id);
    expect(rows.reduce((n, r) => n + r.count, 0)).toBe(100_000);
    for (let partition = 0; partition < 8; partition++) {
      expect(rows.filter((r) => r.partition === partition).map((r) => r.offset)).toEqual(Array.from({ length: batches }, (_, i) => i + 1));
    }
  });
});
