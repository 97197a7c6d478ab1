import { describe, expect, it } from 'vitest';
import { api, createTenant, expectError } from '../helpers/api';

// Issue 36 §2: per-tenant caps on distinct attribute paths (refused past them, nothing written) and on distinct values
// indexed per attribute (past it the attribute is kept and queried, without equality bitmaps), in the limits API; the
// profile index's memory per attribute in GET …/profiles/fields.

const ndjson = (lines: unknown[]) => ({ body: lines.map((line) => JSON.stringify(line)).join('\n'), headers: { 'content-type': 'application/x-ndjson' } });

describe('profile attribute limits', () => {
  it('refuses one request of 100 profiles × 1,000 distinct attribute names with a 422 naming the limit, quickly, storing nothing', async () => {
    const tenant = await createTenant();
    const base = `/tenants/${tenant.name}/profiles`;
    expect((await api('POST', base, { body: [{ user: 1, attributes: { plan: 'gold' } }] })).status).toBe(200);
    const limits = (await api('GET', `/tenants/${tenant.name}/limits`, { token: tenant.key })).body;
    expect(limits).toMatchObject({ maxProfileAttributes: 500, maxIndexedValuesPerAttribute: 1000 });

    const hostile = Array.from({ length: 100 }, (_, user) => ({
      user,
      attributes: Object.fromEntries(Array.from({ length: 1_000 }, (_, i) => [`a${user}_${i}`, i])),
    }));
    // The same body with a bad user ID at its end: what reading and validating 1.4 MB costs on this machine now.
    const validationStarted = performance.now();
    expectError(await api('POST', base, { body: [...hostile, { user: -1, attributes: {} }] }), 400, 'validation_failed');
    const validationMs = performance.now() - validationStarted;
    const started = performance.now();
    const refused = await api('POST', base, { body: hostile });
    const ms = performance.now() - started;
    const error = expectError(refused, 422, 'too_many_attributes');
    expect(error.message).toContain('"a0_500" (item 0, user 0)');
    expect(error.message).toContain('at most 500 distinct attributes (limit maxProfileAttributes');
    expect(error.details).toEqual({ limit: 'maxProfileAttributes', value: 500, attribute: 'a0_500', attributes: 501 });
    // Refused before any read, write or indexing, about as fast as a body that fails validation (before the limit, such a
    // request took 7.7-12 s and grew the server by 430 MB); the margin is for a busy machine.
    expect(ms).toBeLessThan(3 * validationMs + 1_000);

    expectError(await api('GET', `${base}/0`), 404, 'not_found');
    expect((await api('GET', `${base}/1`)).body.attributes).toEqual({ plan: 'gold' });
    const fields = await api('GET', `${base}/fields`, { token: tenant.key });
    expect(fields.body.fields.map((f: { path: string }) => f.path)).toEqual(['plan']);
    expect(fields.body.memoryBytes).toBeLessThan(10_000);
  });

  it('counts nested paths, refuses a whole batch that would pass the limit, and frees a path no profile holds any more', async () => {
    const tenant = await createTenant();
    const base = `/tenants/${tenant.name}/profiles`;
    expect((await api('PUT', `/tenants/${tenant.name}/limits`, { body: { maxProfileAttributes: 3 } })).body.maxProfileAttributes).toBe(3);
    expect((await api('POST', base, { body: [{ user: 1, attributes: { plan: 'free', age: 30 } }] })).status).toBe(200);

    const nested = expectError(await api('POST', base, { body: [{ user: 2, attributes: { address: { city: 'Lyon' } } }] }), 422, 'too_many_attributes');
    expect(nested.details).toMatchObject({ attribute: 'address.city', value: 3, attributes: 4 });
    expect(nested.message).toContain('item 0, user 2');

    const batch = expectError(
      await api('POST', base, {
        body: [
          { user: 1, attributes: { plan: 'gold' } },
          { user: 3, attributes: { country: 'FR' } },
          { user: 4, attributes: { vip: true } },
        ],
      }),
      422,
      'too_many_attributes',
    );
    expect(batch.details).toMatchObject({ attribute: 'vip', value: 3 });
    expect(batch.message).toContain('item 2, user 4');
    expect((await api('GET', `${base}/1`)).body.attributes).toEqual({ plan: 'free', age: 30 });
    expectError(await api('GET', `${base}/3`), 404, 'not_found');

    // Existing attributes and removals are always fine; a path is free again once no profile holds it.
    expect((await api('POST', base, { body: [{ user: 5, attributes: { plan: 'gold', age: 41, country: 'FR' } }] })).status).toBe(200);
    expectError(await api('POST', base, { body: [{ user: 6, attributes: { vip: true } }] }), 422, 'too_many_attributes');
    expect((await api('POST', base, { body: [{ user: 5, attributes: { country: null } }] })).status).toBe(200);
    expect((await api('POST', base, { body: [{ user: 6, attributes: { vip: true } }] })).status).toBe(200);

    expect((await api('PUT', `/tenants/${tenant.name}/limits`, { body: { maxProfileAttributes: null } })).body.maxProfileAttributes).toBe(500);
    expect((await api('POST', base, { body: [{ user: 2, attributes: { address: { city: 'Lyon' } } }] })).status).toBe(200);
  });

  it('stops an NDJSON or CSV import at the line that passes the limit, keeping only the chunks committed before it', async () => {
    const tenant = await createTenant();
    const base = `/tenants/${tenant.name}/profiles`;
    await api('PUT', `/tenants/${tenant.name}/limits`, { body: { maxProfileAttributes: 3 } });

    const lines = [
      { user: 1, attributes: { plan: 'free' } },
      { user: 2, attributes: { age: 20, plan: 'gold' } },
      { user: 3, attributes: { prefs: { sms: true } } },
    ];
    const refused = expectError(await api('POST', `${base}/import`, { token: tenant.key, ...ndjson(lines) }), 422, 'too_many_attributes');
    expect(refused.message).toContain('"prefs.sms" (line 3, user 3)');
    expect(refused.details).toMatchObject({ limit: 'maxProfileAttributes', value: 3, attribute: 'prefs.sms', committedLines: 0 });
    expectError(await api('GET', `${base}/1`), 404, 'not_found');

    const csv = await api('POST', `${base}/import`, {
      token: tenant.key,
      body: 'user,plan,age,country,city\n1,free,20,FR,Lyon\n',
      headers: { 'content-type': 'text/csv' },
    });
    expect(expectError(csv, 422, 'too_many_attributes').details).toMatchObject({ attribute: 'city', committedLines: 0 });
    expectError(await api('GET', `${base}/1`), 404, 'not_found');

    // A chunk (5,000 lines) committed before the line past the limit stays, as with a bad line.
    const long = [...Array.from({ length: 5_000 }, (_, user) => ({ user, attributes: { plan: 'free' } })), { user: 9_000, attributes: { a: 1, b: 2, c: 3 } }];
    const partial = expectError(await api('POST', `${base}/import`, { token: tenant.key, ...ndjson(long) }), 422, 'too_many_attributes');
    expect(partial.details).toMatchObject({ attribute: 'c', committedLines: 5_000 });
    expect((await api('GET', `${base}/4999`)).body.attributes).toEqual({ plan: 'free' });
    expectError(await api('GET', `${base}/9000`), 404, 'not_found');
    expect((await api('GET', `${base}/fields`, { token: tenant.key })).body.fields.map((f: { path: string }) => f.path)).toEqual(['plan']);
  });

  it('keeps values past maxIndexedValuesPerAttribute stored and queryable, as a scanned high-cardinality attribute', async () => {
    const tenant = await createTenant();
    const base = `/tenants/${tenant.name}/profiles`;
    const fieldOf = async (path: string) =>
      (await api('GET', `${base}/fields`, { token: tenant.key })).body.fields.find((f: { path: string }) => f.path === path);
    expect((await api('PUT', `/tenants/${tenant.name}/limits`, { body: { maxIndexedValuesPerAttribute: 3 } })).body.maxIndexedValuesPerAttribute).toBe(3);
    const cities = ['Lyon', 'Paris', 'Nice'];
    await api('POST', base, { body: cities.map((city, user) => ({ user, attributes: { city } })) });
    expect(await fieldOf('city')).toMatchObject({ distinctStrings: 3, highCardinality: false });

    expect((await api('POST', base, { body: [{ user: 3, attributes: { city: 'Brest' } }] })).status).toBe(200);
    expect(await fieldOf('city')).toMatchObject({ users: 4, distinctStrings: null, highCardinality: true, topValues: [] });
    expect((await api('GET', `${base}/3`)).body.attributes).toEqual({ city: 'Brest' });
    const audience = await api('POST', `/tenants/${tenant.name}/audience`, { token: tenant.key, body: { condition: 'profile.city in ["Brest", "Lyon"]' } });
    expect(audience.body).toMatchObject({ count: 2, sample: [0, 3], exact: true });

    // Raised: the tenant's next profile write gives the attribute its equality bitmaps back.
    await api('PUT', `/tenants/${tenant.name}/limits`, { body: { maxIndexedValuesPerAttribute: 10 } });
    await api('POST', base, { body: [{ user: 4, attributes: { plan: 'gold' } }] });
    expect(await fieldOf('city')).toMatchObject({ distinctStrings: 4, highCardinality: false });
    // Lowered: the next write moves the attribute's strings to the per-user map; its answers stay the same.
    await api('PUT', `/tenants/${tenant.name}/limits`, { body: { maxIndexedValuesPerAttribute: 2 } });
    await api('POST', base, { body: [{ user: 4, attributes: { plan: 'free' } }] });
    expect(await fieldOf('city')).toMatchObject({ users: 4, distinctStrings: null, highCardinality: true });
    expect((await api('POST', `/tenants/${tenant.name}/audience`, { token: tenant.key, body: { condition: 'profile.city == "Nice"' } })).body.count).toBe(1);
  });

  it('reports the index memory of each attribute and in all, with the limits', async () => {
    const tenant = await createTenant();
    const base = `/tenants/${tenant.name}/profiles`;
    await api('POST', base, {
      body: Array.from({ length: 2_000 }, (_, user) => ({
        user,
        attributes: { email: `user${user}@example.com`, plan: user % 2 ? 'gold' : 'free', ...(user < 10 ? { vip: true } : {}) },
      })),
    });
    const answer = (await api('GET', `${base}/fields`, { token: tenant.key })).body;
    expect(answer.limits).toEqual({ maxProfileAttributes: 500, maxIndexedValuesPerAttribute: 1000 });
    const memory = Object.fromEntries(answer.fields.map((f: { path: string; memoryBytes: number }) => [f.path, f.memoryBytes]));
    // 2,000 e-mail addresses (high-cardinality, a map entry each) cost far more than two plans or ten flags.
    expect(memory.email).toBeGreaterThan(100_000);
    expect(memory.plan).toBeGreaterThan(0);
    expect(memory.vip).toBeGreaterThan(0);
    expect(memory.plan).toBeLessThan(memory.email / 10);
    expect(answer.memoryBytes).toBeGreaterThan(memory.email + memory.plan + memory.vip);
  });
});
