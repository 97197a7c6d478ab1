import { describe, expect, it } from 'vitest';
import { decodeEvents } from '../../server/engine/log-codec';
import { api, createTenant, expectError } from '../helpers/api';
import { serverSql } from '../helpers/server-db';

async function loggedUsers(tenantId: string): Promise<number[]> {
  const rows = await serverSql<{ events: Uint8Array }>('SELECT "events" FROM "EventLog" WHERE "tenantId" = $1', [tenantId]);
  return rows.flatMap((r) => decodeEvents(r.events).map((e) => e.user)).sort((a, b) => a - b);
}

const events = (users: number[], ids = false) => users.map((user) => ({ user, type: 'click', ...(ids ? { id: `click-${user}` } : {}) }));

describe('POST /events with an Idempotency-Key', () => {
  it('answers a retry like the first request (202, same accepted count, marked replayed) and appends nothing again', async () => {
    const tenant = await createTenant(4);
    const post = (body: unknown, key: string) => api('POST', '/events', { token: tenant.key, body, headers: { 'idempotency-key': key } });
    const first = await post({ events: events([1, 2, 3]) }, 'batch-0001');
    expect(first.status).toBe(202);
    expect(first.body).toEqual({ accepted: 3 });
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const retry = await post({ events: events([1, 2, 3]) }, 'batch-0001');
    expect(retry.status).toBe(202);
    expect(retry.body).toEqual({ accepted: 3 });
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(await loggedUsers(tenant.id)).toEqual([1, 2, 3]);

    const reused = expectError(await post({ events: events([1, 2, 4]) }, 'batch-0001'), 422, 'idempotency_key_reused');
    expect(reused.message).toMatch(/^Idempotency-Key "batch-0001" was already used for a different request body/);
    expect(reused.details).toEqual({ path: 'Idempotency-Key' });
    expect((await post({ events: events([1, 2, 4]) }, 'batch-0002')).status).toBe(202);
    expect(await loggedUsers(tenant.id)).toEqual([1, 1, 2, 2, 3, 4]);

    // Keys belong to their tenant: another tenant's identical key is a new request.
    const other = await createTenant(2);
    expect(
      (await api('POST', '/events', { token: other.key, body: { events: events([9]) }, headers: { 'idempotency-key': 'batch-0001' } })).headers.get(
        'idempotent-replayed',
      ),
    ).toBeNull();
  });

  it('refuses a key that is empty, too long or not visible ASCII with a 400 naming the header', async () => {
    const tenant = await createTenant(2);
    for (const key of [' '.repeat(0), 'k'.repeat(256), 'clé']) {
      const error = expectError(
        await api('POST', '/events', { token: tenant.key, body: { events: events([1]) }, headers: { 'idempotency-key': key } }),
        400,
        'validation_failed',
      );
      expect(error.message).toMatch(/^Idempotency-Key: expected 1 to 255 visible ASCII characters/);
    }
    expect(await loggedUsers(tenant.id)).toEqual([]);
  });
});

describe('POST /events with event ids', () => {
  it('appends each id once: a resent event is counted in `duplicates`, not appended', async () => {
    const tenant = await createTenant(4);
    const post = (body: unknown) => api('POST', '/events', { token: tenant.key, body });
    expect((await post({ events: events([1, 2, 3], true) })).body).toEqual({ accepted: 3 });
    const resent = await post({ events: [...events([2, 3, 4], true), { user: 5, type: 'no-id' }] });
    expect(resent.status).toBe(202);
    expect(resent.body).toEqual({ accepted: 4, duplicates: 2 });
    expect(await loggedUsers(tenant.id)).toEqual([1, 2, 3, 4, 5]);
    for (const [id, message] of [
      ['', /^events\[0\]\.id: expected a non-empty string/],
      [7, /^events\[0\]\.id: expected a non-empty string of at most 255 characters, got number 7/],
      ['x'.repeat(256), /^events\[0\]\.id: /],
    ] as const) {
      expect(expectError(await post({ events: [{ id, user: 1, type: 'x' }] }), 400, 'validation_failed').message).toMatch(message);
    }
  });
});

describe('group commit isolation', () => {
  it('a batch that cannot be stored is a 400 of its own; valid batches sent at the same time are all acknowledged', async () => {
    const tenant = await createTenant(4);
    // Refused by the JSON depth limit, or else by the log encoder (the stack overflows): either way on its own.
    const deep = `{"events":[{"user":99,"type":"deep","data":${'{"a":'.repeat(200_000)}1${'}'.repeat(200_000)}}]}`;
    const bad = Array.from({ length: 4 }, () => api('POST', '/events', { token: tenant.key, body: deep, headers: { 'content-type': 'application/json' } }));
    const good = Array.from({ length: 40 }, (_, i) => api('POST', '/events', { token: tenant.key, body: { events: events([i]) } }));
    for (const result of await Promise.all(bad)) {
      expect(result.status, JSON.stringify(result.body)).toBe(400);
      expect(result.body.error.message).toMatch(/nests .* levels deep|cannot be stored/);
    }
    for (const result of await Promise.all(good)) expect(result.status).toBe(202);
    expect(await loggedUsers(tenant.id)).toEqual(Array.from({ length: 40 }, (_, i) => i));
  });
});
