import { describe, expect, inject, it } from 'vitest';
import { RoaringBitmap32, serializeBitmap } from '../../server/crowd/bitmap';
import { api, createTenant, expectError } from '../helpers/api';
import { serverSql } from '../helpers/server-db';
import { parseDatabaseUrl } from '../../server/storage/database-url';
import { JOURNAL_SEQUENCE } from '../../server/storage/journal/max-seq';

/** The next journal seq as the engine takes it (server/storage/journal/max-seq.ts), so the server's own later rows never repeat it. */
const NEXT_SEQ =
  parseDatabaseUrl(inject('serverDatabaseUrl')).provider === 'postgres'
    ? `nextval('"${JOURNAL_SEQUENCE}"')`
    : '(SELECT COALESCE(MAX("seq"), 0) + 1 FROM "Journal")';

/** A journal row as the engine writes it, with the next seq; returns that seq. */
async function journalMove(tenantId: string, move: { user?: number; users?: number[]; from?: string | null; to: string }): Promise<number> {
  const bitmap = move.users ? serializeBitmap(new RoaringBitmap32(move.users)) : null;
  const rows = await serverSql<{ seq: number | string }>(
    `INSERT INTO "Journal" ("seq", "tenantId", "instanceId", "partition", "fromStep", "toStep", "user", "bitmap", "count", "leaveAction", "enterAction", "timeMs")
     VALUES (${NEXT_SEQ}, $1, 'in_test', 0, $2, $3, $4, $5, $6, 'bye', 'hello', $7) RETURNING "seq"`,
    [tenantId, move.from ?? null, move.to, move.user ?? null, bitmap, move.users?.length ?? 1, Date.UTC(2026, 5, 1)],
  );
  return Number(rows[0].seq);
}

describe('GET /notifications', () => {
  it('pages through the tenant’s moves with a next cursor and keeps tenants apart', async () => {
    const [a, b] = [await createTenant(2), await createTenant(2)];
    const seqs = [];
    for (let user = 1; user <= 5; user++) seqs.push(await journalMove(a.id, { user, from: 'entry', to: 'next' }));
    const bulk = await journalMove(a.id, { users: [7, 3, 11], from: null, to: 'entry' });
    await journalMove(b.id, { user: 99, to: 'elsewhere' });

    const first = await api('GET', '/notifications?limit=2', { token: a.key });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body.items.map((i: { user: number }) => i.user)).toEqual([1, 2]);
    expect(first.body.next).toBe(seqs[1]);
    expect(first.body.items[0]).toEqual({
      seq: seqs[0],
      instanceId: 'in_test',
      from: 'entry',
      to: 'next',
      user: 1,
      count: 1,
      leaveAction: 'bye',
      enterAction: 'hello',
      time: '2026-06-01T00:00:00.000Z',
    });
    const rest = await api('GET', `/notifications?after=${first.body.next}&limit=100`, { token: a.key });
    expect(rest.body.items.map((i: { seq: number }) => i.seq)).toEqual([...seqs.slice(2), bulk]);
    expect(rest.body.items.at(-1)).toMatchObject({ from: null, to: 'entry', users: [3, 7, 11], count: 3 });
    const done = await api('GET', `/notifications?after=${rest.body.next}`, { token: a.key });
    expect(done.body).toEqual({ items: [], next: bulk });

    const asAdmin = await api('GET', `/notifications?tenant=${b.name}`);
    expect(asAdmin.body.items.map((i: { user: number }) => i.user)).toEqual([99]);
    expect((await api('GET', '/notifications', { token: b.key })).body.items).toHaveLength(1);
  });

  it('refuses bad paging and tenant input with a 4xx naming it', async () => {
    const [a, b] = [await createTenant(2), await createTenant(2)];
    expect(expectError(await api('GET', '/notifications?limit=0', { token: a.key }), 400, 'validation_failed').message).toMatch(/^limit/);
    expect(expectError(await api('GET', '/notifications?limit=10001', { token: a.key }), 400, 'validation_failed').message).toMatch(/^limit/);
    expect(expectError(await api('GET', '/notifications?after=-1', { token: a.key }), 400, 'validation_failed').message).toMatch(/^after/);
    expect(expectError(await api('GET', '/notifications?after=abc', { token: a.key }), 400, 'validation_failed').message).toMatch(/^after/);
    expect(expectError(await api('GET', '/notifications'), 400, 'validation_failed').message).toMatch(/^tenant: required/);
    expectError(await api('GET', `/notifications?tenant=${b.name}`, { token: a.key }), 404, 'not_found');
    expectError(await api('GET', '/notifications', { token: null }), 401, 'unauthorized');
  });
});

describe('consumers', () => {
  it('start at the tail, the head or a cursor; report cursor and lag; commit forward only', async () => {
    const tenant = await createTenant(2);
    const call = (method: string, path: string, body?: unknown) => api(method, path, { token: tenant.key, body });
    const s1 = await journalMove(tenant.id, { user: 1, to: 'b' });
    const s2 = await journalMove(tenant.id, { user: 2, to: 'b' });

    const tail = await call('PUT', '/consumers/crm-sync', { start: 'tail' });
    expect(tail.status, JSON.stringify(tail.body)).toBe(201);
    expect(tail.body).toMatchObject({ name: 'crm-sync', cursor: s2, lag: 0 });
    expect((await call('PUT', '/consumers/replay', { start: 'head' })).body).toMatchObject({ cursor: 0, lag: 2 });
    expect((await call('PUT', '/consumers/from-first', { start: s1 })).body).toMatchObject({ cursor: s1, lag: 1 });
    expect((await call('PUT', '/consumers/defaulted', {})).body).toMatchObject({ cursor: s2 });
    const again = await call('PUT', '/consumers/replay', { start: 'tail' });
    expect(again.status).toBe(200);
    expect(again.body.cursor).toBe(0);

    const s3 = await journalMove(tenant.id, { user: 3, to: 'b' });
    expect((await call('GET', '/consumers/crm-sync')).body).toMatchObject({ cursor: s2, lag: 1 });
    const page = await api('GET', `/notifications?after=${s2}`, { token: tenant.key });
    expect(page.body.items.map((i: { user: number }) => i.user)).toEqual([3]);
    const committed = await call('POST', '/consumers/crm-sync/commit', { cursor: page.body.next });
    expect(committed.status).toBe(200);
    expect(committed.body).toMatchObject({ cursor: s3, lag: 0 });
    expect((await call('POST', '/consumers/crm-sync/commit', { cursor: s3 })).status).toBe(200);

    const backwards = expectError(await call('POST', '/consumers/crm-sync/commit', { cursor: s1 }), 409, 'conflict');
    expect(backwards.message).toContain(String(s1));
    expect(backwards.message).toContain(String(s3));
    expect(backwards.details).toEqual({ cursor: s1, committed: s3 });
    expectError(await call('POST', '/consumers/crm-sync/commit', { cursor: s3 + 1_000_000 }), 400, 'bad_request');
    expect((await call('GET', '/consumers/crm-sync')).body.cursor).toBe(s3);

    const listed = await call('GET', '/consumers');
    expect(listed.body.consumers.map((c: { name: string }) => c.name)).toEqual(['crm-sync', 'defaulted', 'from-first', 'replay']);
    expect((await call('DELETE', '/consumers/defaulted')).status).toBe(204);
    expectError(await call('GET', '/consumers/defaulted'), 404, 'not_found');
  });

  it('refuses bad consumer input and keeps consumers inside their tenant', async () => {
    const [a, b] = [await createTenant(2), await createTenant(2)];
    expect((await api('PUT', '/consumers/shared-name', { token: a.key, body: { start: 'head' } })).status).toBe(201);
    expectError(await api('GET', '/consumers/shared-name', { token: b.key }), 404, 'not_found');
    expect((await api('GET', `/consumers/shared-name?tenant=${a.name}`)).body.name).toBe('shared-name');
    expect(expectError(await api('PUT', '/consumers/bad%20name', { token: a.key, body: {} }), 400, 'validation_failed').message).toMatch(/^name/);
    expect(expectError(await api('PUT', '/consumers/x', { token: a.key, body: { start: 'middle' } }), 400, 'validation_failed').message).toMatch(/^start/);
    expectError(await api('PUT', '/consumers/x', { token: a.key, body: { start: 5_000_000_000 } }), 400, 'bad_request');
    expect(expectError(await api('POST', '/consumers/shared-name/commit', { token: a.key, body: { cursor: -3 } }), 400, 'validation_failed').message).toMatch(
      /^cursor/,
    );
    for (const cursor of ['0', true, [0], null]) {
      expect(expectError(await api('POST', '/consumers/shared-name/commit', { token: a.key, body: { cursor } }), 400, 'validation_failed').message).toMatch(
        /^cursor/,
      );
    }
    expect(expectError(await api('PUT', '/consumers/x', { token: a.key, body: { start: '3' } }), 400, 'validation_failed').message).toMatch(/^start/);
    expectError(await api('POST', '/consumers/missing/commit', { token: a.key, body: { cursor: 0 } }), 404, 'not_found');
    expect(expectError(await api('PUT', '/consumers/x', { body: { start: 'tail' } }), 400, 'validation_failed').message).toMatch(/^tenant: required/);
  });
});
