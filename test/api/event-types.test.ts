import { describe, expect, it } from 'vitest';
import { api, createTenant, expectError } from '../helpers/api';
import { USER_BLOCK } from '../../server/engine/partitioning';

// GET /tenants/{tenant}/events/types: the event types of the tenant's newest log rows, with counts (the studio's
// event-type chooser), over real HTTP on both providers.

// Users of id blocks 1, 2, 3…: a tenant deals blocks of USER_BLOCK ids to its partitions round-robin, so they spread.
const events = (type: string, blocks: number[], data: object = {}) => blocks.map((block) => ({ user: block * USER_BLOCK, type, data }));

describe('GET /tenants/{tenant}/events/types', () => {
  it('is empty for a tenant that sent nothing, then lists the types sent, most events first, counted over every partition', async () => {
    const tenant = await createTenant(4);
    const empty = await api('GET', `/tenants/${tenant.name}/events/types`);
    expect(empty.status).toBe(200);
    expect(empty.body).toEqual({ types: [], events: 0, rows: 0, since: null });

    const before = Date.now() - 60_000;
    expect(
      (
        await api('POST', '/events', {
          token: tenant.key,
          body: { events: [...events('open', [1, 2, 3, 4, 5, 6]), ...events('purchase', [7, 8], { amount: 12.5, nested: { sku: 'a' } })] },
        })
      ).status,
    ).toBe(202);
    expect((await api('POST', '/events', { token: tenant.key, body: { events: [...events('open', [9]), ...events('signup', [10, 11, 12])] } })).status).toBe(
      202,
    );
    const listed = await api('GET', `/tenants/${tenant.name}/events/types`, { token: tenant.key });
    expect(listed.status, JSON.stringify(listed.body)).toBe(200);
    expect(listed.body.types).toEqual([
      { type: 'open', events: 7 },
      { type: 'signup', events: 3 },
      { type: 'purchase', events: 2 },
    ]);
    expect(listed.body.events).toBe(12);
    expect(listed.body.rows).toBeGreaterThanOrEqual(4);
    expect(Date.parse(listed.body.since)).toBeGreaterThan(before);
  });

  it('keeps tenants apart', async () => {
    const [a, b] = [await createTenant(2), await createTenant(2)];
    expect((await api('POST', '/events', { token: a.key, body: { events: events('only-in-a', [1]) } })).status).toBe(202);
    expect((await api('GET', `/tenants/${b.name}/events/types`)).body.types).toEqual([]);
    expect((await api('GET', `/tenants/${a.name}/events/types`)).body.types).toEqual([{ type: 'only-in-a', events: 1 }]);
  });

  it("refuses a query parameter, an unknown tenant, a key without the read scope and another tenant's key, naming the problem", async () => {
    const tenant = await createTenant(2);
    expect(expectError(await api('GET', `/tenants/${tenant.name}/events/types?limit=5`), 400, 'validation_failed').message).toMatch(/limit/);
    expect(expectError(await api('GET', '/tenants/no-such-tenant/events/types'), 404, 'not_found').message).toMatch(/tenant/i);
    const ingestOnly = await createTenant(2, ['ingest']);
    expect(expectError(await api('GET', `/tenants/${ingestOnly.name}/events/types`, { token: ingestOnly.key }), 403, 'forbidden').message).toMatch(/read/);
    const other = await createTenant(1);
    expect(expectError(await api('GET', `/tenants/${tenant.name}/events/types`, { token: other.key }), 404, 'not_found').message).toMatch(/tenant/i);
  });
});
