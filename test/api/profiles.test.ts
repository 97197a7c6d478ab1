import { describe, expect, it } from 'vitest';
import { onProfilesChanged } from '../../server/profiles/changes';
import { deleteProfile, getProfile, mergeAttributes, upsertProfiles } from '../../server/profiles/profiles';
import { api, createTenant, expectError } from '../helpers/api';
import { tenantRow } from '../helpers/tenant-row';
import { database } from '../helpers/app-db';

describe('profiles API', () => {
  it('upserts in bulk, merges attributes, gets and deletes a profile', async () => {
    const tenant = await createTenant();
    const base = `/tenants/${tenant.name}/profiles`;
    const first = await api('POST', base, {
      token: tenant.key,
      body: [
        { user: 1, attributes: { plan: 'free', country: 'FR', prefs: { email: true, sms: false } } },
        { user: 4294967295, attributes: { plan: 'gold' } },
        { user: 0, attributes: {} },
      ],
    });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body).toEqual({ upserted: 3, created: 3 });

    const second = await api('POST', base, {
      token: tenant.key,
      body: [
        { user: 1, attributes: { plan: 'gold', country: null, prefs: { sms: true } } },
        { user: 1, attributes: { visits: 3 } },
        { user: 2, attributes: { plan: 'free' } },
      ],
    });
    expect(second.body).toEqual({ upserted: 2, created: 1 });

    const one = await api('GET', `${base}/1`, { token: tenant.key });
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ user: 1, attributes: { plan: 'gold', prefs: { email: true, sms: true }, visits: 3 } });
    expect(one.body.attributes).not.toHaveProperty('country');
    expect(Date.parse(one.body.updatedAt)).not.toBeNaN();
    expect((await api('GET', `${base}/4294967295`)).body.attributes).toEqual({ plan: 'gold' });
    expect((await api('GET', `${base}/0`)).body.attributes).toEqual({});

    expect((await api('DELETE', `${base}/1`, { token: tenant.key })).status).toBe(204);
    expect(expectError(await api('GET', `${base}/1`), 404, 'not_found').message).toContain('user 1');
    expectError(await api('DELETE', `${base}/1`), 404, 'not_found');
  });

  it('refuses bad input with a 4xx naming the problem and writes nothing of a refused batch', async () => {
    const tenant = await createTenant();
    const base = `/tenants/${tenant.name}/profiles`;
    const post = (body: unknown) => api('POST', base, { body });
    expect(
      expectError(
        await post([
          { user: 1, attributes: {} },
          { user: -1, attributes: {} },
        ]),
        400,
        'validation_failed',
      ).message,
    ).toMatch(/^1\.user/);
    expect(expectError(await post([{ user: 4294967296, attributes: {} }]), 400, 'validation_failed').message).toMatch(/^0\.user/);
    expect(expectError(await post([{ user: 1.5, attributes: {} }]), 400, 'validation_failed').message).toMatch(/^0\.user/);
    expect(expectError(await post([{ user: '7', attributes: {} }]), 400, 'validation_failed').message).toMatch(/^0\.user/);
    expect(expectError(await post([{ user: 7, attributes: [1, 2] }]), 400, 'validation_failed').message).toMatch(/^0\.attributes/);
    expect(expectError(await post([{ user: 7 }]), 400, 'validation_failed').message).toMatch(/attributes/);
    expect(expectError(await post([{ user: 7, attributes: {}, extra: 1 }]), 400, 'validation_failed').message).toMatch(/extra/);
    expectError(await post({ user: 7, attributes: {} }), 400, 'validation_failed');
    expectError(await post([]), 400, 'validation_failed');
    const tooMany = Array.from({ length: 10_001 }, (_, user) => ({ user, attributes: {} }));
    expect(expectError(await post(tooMany), 400, 'validation_failed').message).toMatch(/10000/);
    const huge = await post([
      { user: 8, attributes: { ok: true } },
      { user: 9, attributes: { blob: 'x'.repeat(70_000) } },
    ]);
    expect(expectError(huge, 400, 'validation_failed').message).toMatch(/user 9/);
    expectError(await api('GET', `${base}/8`), 404, 'not_found');
    const spanning = Array.from({ length: 1_500 }, (_, user) => ({ user, attributes: user === 1_400 ? { blob: 'x'.repeat(70_000) } : { ok: true } }));
    expect(expectError(await post(spanning), 400, 'validation_failed').message).toMatch(/user 1400/);
    expectError(await api('GET', `${base}/0`), 404, 'not_found');
    expectError(await api('POST', base, { body: '[{"user": 1', headers: { 'content-type': 'application/json' } }), 400, 'invalid_json');
    expectError(await api('POST', base, { body: 'user=1', headers: { 'content-type': 'text/plain' } }), 415, 'unsupported_media_type');
    for (const bad of ['abc', '-1', '4294967296', '1.5', '99999999999']) {
      expect(expectError(await api('GET', `${base}/${bad}`), 400, 'invalid_id').message).toContain(bad);
    }
    expectError(await api('DELETE', `${base}/abc`), 400, 'invalid_id');
    expectError(await api('GET', `${base}/12345`), 404, 'not_found');
  });

  it('takes 10,000 profiles in one call', async () => {
    const tenant = await createTenant();
    const items = Array.from({ length: 10_000 }, (_, i) => ({ user: i * 7, attributes: { tier: i % 3, name: `user ${i}` } }));
    const result = await api('POST', `/tenants/${tenant.name}/profiles`, { body: items });
    expect(result.status).toBe(200);
    expect(result.body).toEqual({ upserted: 10_000, created: 10_000 });
    expect((await api('GET', `/tenants/${tenant.name}/profiles/69993`)).body.attributes).toEqual({ tier: 0, name: 'user 9999' });
  });

  it('isolates tenants: a key of A gets 404 for the profiles of B', async () => {
    const a = await createTenant();
    const b = await createTenant();
    await api('POST', `/tenants/${b.name}/profiles`, { body: [{ user: 5, attributes: { secret: true } }] });
    expectError(await api('GET', `/tenants/${b.name}/profiles/5`, { token: a.key }), 404, 'not_found');
    expectError(await api('DELETE', `/tenants/${b.name}/profiles/5`, { token: a.key }), 404, 'not_found');
    expectError(await api('POST', `/tenants/${b.name}/profiles`, { token: a.key, body: [{ user: 5, attributes: {} }] }), 404, 'not_found');
    expectError(await api('GET', `/tenants/${a.name}/profiles/5`, { token: a.key }), 404, 'not_found');
    expect((await api('GET', `/tenants/${b.name}/profiles/5`, { token: b.key })).body.attributes).toEqual({ secret: true });
    expectError(await api('GET', `/tenants/${b.name}/profiles/5`, { token: null }), 401, 'unauthorized');
  });
});

// The engine's side of profiles: change notices, on this test file's own database.
describe('profiles library', () => {
  it('merges by JSON Merge Patch rules', () => {
    expect(mergeAttributes({ a: 1, b: { c: 2, d: 3 }, e: [1] }, { a: null, b: { c: null, x: 1 }, e: [2], f: 'new' })).toEqual({
      b: { d: 3, x: 1 },
      e: [2],
      f: 'new',
    });
    expect(mergeAttributes({ a: 'text' }, { a: { nested: true } })).toEqual({ a: { nested: true } });
  });

  it('notifies listeners after each committed upsert and delete, and not after a refused one', async () => {
    const tenantId = await tenantRow('tn_notify');
    const heard: Array<[string, number[]]> = [];
    const unsubscribe = onProfilesChanged(database(), (tenant, users) => heard.push([tenant, users]));
    await upsertProfiles(database(), tenantId, [
      { user: 3, attributes: { a: 1 } },
      { user: 1, attributes: { a: 2 } },
      { user: 3, attributes: { b: 1 } },
    ]);
    await deleteProfile(database(), tenantId, 1);
    await expect(upsertProfiles(database(), tenantId, [{ user: 2, attributes: { big: 'x'.repeat(70_000) } }])).rejects.toMatchObject({
      code: 'validation_failed',
    });
    await expect(deleteProfile(database(), tenantId, 99)).rejects.toMatchObject({ code: 'not_found' });
    unsubscribe();
    await upsertProfiles(database(), tenantId, [{ user: 4, attributes: {} }]);
    expect(heard).toEqual([
      [tenantId, [3, 1]],
      [tenantId, [1]],
    ]);
    expect((await getProfile(database(), tenantId, 3)).attributes).toEqual({ a: 1, b: 1 });
  });

  it('keeps both attributes when two merges of the same user race', async () => {
    const tenantId = await tenantRow('tn_race');
    await Promise.all(Array.from({ length: 8 }, (_, i) => upsertProfiles(database(), tenantId, [{ user: 1, attributes: { [`k${i}`]: i } }])));
    expect(Object.keys((await getProfile(database(), tenantId, 1)).attributes).sort()).toEqual(['k0', 'k1', 'k2', 'k3', 'k4', 'k5', 'k6', 'k7']);
  });
});
