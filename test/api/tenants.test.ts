import { describe, expect, it } from 'vitest';
import { api, createTenant, expectError, uniqueName } from '../helpers/api';

describe('tenants API', () => {
  it('creates, lists, gets and deletes a tenant with default partitions', async () => {
    const name = uniqueName('acme');
    const created = await api('POST', '/tenants', { body: { name } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name, partitions: 8 });
    const list = await api('GET', '/tenants');
    expect(list.body.tenants.map((t: { name: string }) => t.name)).toContain(name);
    expect((await api('GET', `/tenants/${name}`)).body.id).toBe(created.body.id);
    expect((await api('GET', `/tenants/${created.body.id}`)).body.name).toBe(name);
    expect((await api('DELETE', `/tenants/${name}`)).status).toBe(204);
    expectError(await api('GET', `/tenants/${name}`), 404, 'not_found');
    // Lookups are cached; a deletion is seen at once, and the name can be reused for a new tenant.
    const again = await api('POST', '/tenants', { body: { name } });
    expect(again.status).toBe(201);
    expect((await api('GET', `/tenants/${name}`)).body.id).toBe(again.body.id);
    expect(again.body.id).not.toBe(created.body.id);
  });

  it("a deleted tenant's keys stop working at once", async () => {
    const tenant = await createTenant();
    expect((await api('GET', `/tenants/${tenant.name}`, { token: tenant.key })).status).toBe(200);
    expect((await api('DELETE', `/tenants/${tenant.name}`)).status).toBe(204);
    expectError(await api('GET', `/tenants/${tenant.name}`, { token: tenant.key }), 401, 'unauthorized');
  });

  it('refuses bad tenant input with a 4xx naming the problem', async () => {
    expect(expectError(await api('POST', '/tenants', { body: { name: 'x', partitions: 0 } }), 400, 'validation_failed').message).toMatch(/partitions/);
    expect(expectError(await api('POST', '/tenants', { body: { name: 'x', partitions: 257 } }), 400, 'validation_failed').message).toMatch(/partitions/);
    expect(expectError(await api('POST', '/tenants', { body: { name: 'Has Spaces' } }), 400, 'validation_failed').message).toMatch(/name/);
    expect(expectError(await api('POST', '/tenants', { body: { name: 'x', partitions: '8' } }), 400, 'validation_failed').message).toMatch(/partitions/);
    expectError(await api('POST', '/tenants', { body: '{"name": "broken', headers: { 'content-type': 'application/json' } }), 400, 'invalid_json');
    expectError(await api('POST', '/tenants', { body: 'name=x', headers: { 'content-type': 'text/plain' } }), 415, 'unsupported_media_type');
    const name = uniqueName('dup');
    expect((await api('POST', '/tenants', { body: { name } })).status).toBe(201);
    expect(expectError(await api('POST', '/tenants', { body: { name } }), 409, 'conflict').message).toContain(name);
    expectError(await api('GET', '/tenants/nope-does-not-exist'), 404, 'not_found');
    expectError(await api('GET', '/no-such-route'), 404, 'not_found');
  });

  it('requires credentials and keeps the admin calls for the admin', async () => {
    expectError(await api('GET', '/tenants', { token: null }), 401, 'unauthorized');
    expectError(await api('GET', '/tenants', { token: 'wrong' }), 401, 'unauthorized');
    expectError(await api('GET', '/tenants', { token: null, headers: { authorization: 'Basic abc' } }), 401, 'unauthorized');
    const tenant = await createTenant();
    expectError(await api('POST', '/tenants', { token: tenant.key, body: { name: uniqueName('x') } }), 403, 'forbidden');
    expectError(await api('DELETE', `/tenants/${tenant.name}`, { token: tenant.key }), 403, 'forbidden');
    const own = await api('GET', '/tenants', { token: tenant.key });
    expect(own.body.tenants.map((t: { name: string }) => t.name)).toEqual([tenant.name]);
  });

  it('isolates tenants: a key of A gets 404 for B', async () => {
    const a = await createTenant();
    const b = await createTenant();
    expect((await api('GET', `/tenants/${a.name}`, { token: a.key })).status).toBe(200);
    expectError(await api('GET', `/tenants/${b.name}`, { token: a.key }), 404, 'not_found');
    const withKeysScope = await api('POST', `/tenants/${a.name}/keys`, { body: { name: 'keys', scopes: ['keys'] } });
    expectError(await api('GET', `/tenants/${b.name}/keys`, { token: withKeysScope.body.secret }), 404, 'not_found');
    expectError(await api('POST', `/tenants/${b.name}/keys`, { token: withKeysScope.body.secret, body: { scopes: ['keys'] } }), 404, 'not_found');
  });

  it('shows a key secret once, lists keys without secrets, and a revoked key gets 401', async () => {
    const tenant = await createTenant();
    const created = await api('POST', `/tenants/${tenant.name}/keys`, { body: { name: 'ci' } });
    expect(created.body.secret).toMatch(/^cfk_/);
    const listed = await api('GET', `/tenants/${tenant.name}/keys`);
    expect(listed.body.keys).toHaveLength(2);
    expect(JSON.stringify(listed.body)).not.toContain(created.body.secret);
    expect((await api('GET', `/tenants/${tenant.name}`, { token: created.body.secret })).status).toBe(200);
    const revoked = await api('DELETE', `/tenants/${tenant.name}/keys/${created.body.id}`);
    expect(revoked.body.revokedAt).not.toBeNull();
    expect(expectError(await api('GET', `/tenants/${tenant.name}`, { token: created.body.secret }), 401, 'unauthorized').message).toMatch(/revoked/);
    expectError(await api('DELETE', `/tenants/${tenant.name}/keys/key_missing`), 404, 'not_found');
  });

  it('signs a studio session in with the admin token and out again', async () => {
    expectError(await api('POST', '/session', { token: null, body: { token: 'wrong-token' } }), 401, 'unauthorized');
    const signIn = await api('POST', '/session', { token: null, body: { token: (await import('vitest')).inject('adminToken') } });
    expect(signIn.status).toBe(200);
    const cookie = signIn.headers.get('set-cookie')!.split(';')[0];
    expect((await api('GET', '/tenants', { token: null, headers: { cookie } })).status).toBe(200);
    expectError(await api('GET', '/tenants', { token: null, headers: { cookie: 'cf_session=1.forged' } }), 401, 'unauthorized');
    const signOut = await api('DELETE', '/session', { token: null, headers: { cookie } });
    expect(signOut.headers.get('set-cookie')).toMatch(/Max-Age=0/);
  });
});
