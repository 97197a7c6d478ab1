import { describe, expect, it } from 'vitest';
import { api, createTenant, expectError } from '../helpers/api';

// API key scopes: least privilege by default, no key can mint a stronger one, and revoking a key revokes the keys
// it minted.

async function key(tenant: string, scopes?: string[], token?: string) {
  const created = await api('POST', `/tenants/${tenant}/keys`, { token, body: { name: 'scoped', ...(scopes ? { scopes } : {}) } });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body as { id: string; secret: string; scopes: string[]; createdBy: string };
}

describe('API key scopes', () => {
  it('gives a new key only the ingest scope unless asked, and enforces each scope', async () => {
    const tenant = await createTenant();
    const ingest = await key(tenant.name);
    expect(ingest.scopes).toEqual(['ingest']);
    expect(ingest.createdBy).toBe('admin');
    expect((await api('POST', '/events', { token: ingest.secret, body: { events: [{ user: 1, type: 'x' }] } })).status).toBe(202);
    expect(expectError(await api('GET', `/tenants/${tenant.name}/crowds`, { token: ingest.secret }), 403, 'forbidden').message).toMatch(/"read" scope/);
    expect((await api('GET', `/tenants/${tenant.name}`, { token: ingest.secret })).status).toBe(200);

    const read = await key(tenant.name, ['read']);
    expect((await api('GET', `/tenants/${tenant.name}/crowds`, { token: read.secret })).status).toBe(200);
    expect(
      expectError(
        await api('PUT', `/tenants/${tenant.name}/crowds/c`, { token: read.secret, body: '1\n', headers: { 'content-type': 'text/plain' } }),
        403,
        'forbidden',
      ).message,
    ).toMatch(/"manage" scope/);
    expectError(await api('POST', '/events', { token: read.secret, body: { events: [{ user: 1, type: 'x' }] } }), 403, 'forbidden');
    expect(expectError(await api('GET', `/tenants/${tenant.name}/keys`, { token: read.secret }), 403, 'forbidden').message).toMatch(/"keys" scope/);

    const manage = await key(tenant.name, ['manage']);
    expect(
      (await api('PUT', `/tenants/${tenant.name}/crowds/c`, { token: manage.secret, body: '1\n', headers: { 'content-type': 'text/plain' } })).status,
    ).toBe(201);
    expectError(await api('POST', `/tenants/${tenant.name}/keys`, { token: manage.secret, body: {} }), 403, 'forbidden');
  });

  it('lets a key mint only keys with its own scopes, and revoking it revokes what it minted', async () => {
    const tenant = await createTenant();
    const keys = await key(tenant.name, ['keys', 'read']);
    const denied = expectError(await api('POST', `/tenants/${tenant.name}/keys`, { token: keys.secret, body: { scopes: ['manage'] } }), 403, 'forbidden');
    expect(denied.message).toMatch(/lacks: manage/);
    const child = await key(tenant.name, ['read'], keys.secret);
    expect(child.createdBy).toBe(keys.id);
    const grandchild = await key(tenant.name, ['keys'], keys.secret).then(async (k) => ({ parent: k, leaf: await key(tenant.name, ['keys'], k.secret) }));
    expect((await api('GET', `/tenants/${tenant.name}/crowds`, { token: child.secret })).status).toBe(200);

    const revoked = await api('DELETE', `/tenants/${tenant.name}/keys/${keys.id}`);
    expect(revoked.status).toBe(200);
    expect(new Set(revoked.body.alsoRevoked)).toEqual(new Set([child.id, grandchild.parent.id, grandchild.leaf.id]));
    for (const secret of [keys.secret, child.secret, grandchild.parent.secret, grandchild.leaf.secret]) {
      expect(expectError(await api('GET', `/tenants/${tenant.name}`, { token: secret }), 401, 'unauthorized').message).toMatch(/revoked/);
    }
    // The tenant's other keys are untouched.
    expect((await api('GET', `/tenants/${tenant.name}/crowds`, { token: tenant.key })).status).toBe(200);
  });

  it('records when a key was last used, and refuses unknown scopes', async () => {
    const tenant = await createTenant();
    const fresh = await key(tenant.name, ['read']);
    const before = (await api('GET', `/tenants/${tenant.name}/keys`)).body.keys.find((k: { id: string }) => k.id === fresh.id);
    expect(before.lastUsedAt).toBeNull();
    expect((await api('GET', `/tenants/${tenant.name}/crowds`, { token: fresh.secret })).status).toBe(200);
    await expect
      .poll(async () => (await api('GET', `/tenants/${tenant.name}/keys`)).body.keys.find((k: { id: string }) => k.id === fresh.id).lastUsedAt, {
        timeout: 10_000,
      })
      .not.toBeNull();
    expect(expectError(await api('POST', `/tenants/${tenant.name}/keys`, { body: { scopes: ['root'] } }), 400, 'validation_failed').message).toMatch(/scopes/);
    expectError(await api('POST', `/tenants/${tenant.name}/keys`, { body: { scopes: [] } }), 400, 'validation_failed');
  });

  it('lists the scope each operation needs in the OpenAPI document', async () => {
    const document = (await api('GET', '/openapi.json')).body;
    expect(document.info.description).toMatch(/`ingest`/);
    const scopes: Record<string, string> = {};
    for (const [path, item] of Object.entries<Record<string, { 'x-required-scope'?: string }>>(document.paths)) {
      for (const [method, op] of Object.entries(item))
        if (path !== '/session' && path !== '/openapi.json') scopes[`${method.toUpperCase()} ${path}`] = op['x-required-scope']!;
    }
    expect(Object.values(scopes).every((s) => ['ingest', 'read', 'manage', 'keys', 'any', 'admin'].includes(s))).toBe(true);
    expect(scopes['POST /events']).toBe('ingest');
    expect(scopes['GET /tenants/{tenant}/crowds']).toBe('read');
    expect(scopes['PUT /tenants/{tenant}/crowds/{name}']).toBe('manage');
    expect(scopes['POST /tenants/{tenant}/keys']).toBe('keys');
    expect(scopes['POST /tenants']).toBe('admin');
  });
});
