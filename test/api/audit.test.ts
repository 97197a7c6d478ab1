import { describe, expect, inject, it } from 'vitest';
import { api, baseUrl, createTenant, expectError, uniqueName } from '../helpers/api';

// The audit trail records who did what (admin token, admin session or key id) and the admin reads it back.

type AuditEvent = { seq: number; at: string; actor: string; action: string; tenantId: string | null; target: string; details: unknown };

async function auditOf(tenantId: string): Promise<AuditEvent[]> {
  const response = await api('GET', `/audit?tenantId=${tenantId}&limit=1000`);
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return response.body.events;
}

describe('audit trail', () => {
  it('records tenant, key, instance and session actions with who did them, for the admin only', async () => {
    const tenant = await createTenant(2);
    const manager = (await api('POST', `/tenants/${tenant.name}/keys`, { body: { name: 'mgr', scopes: ['manage', 'read', 'keys'] } })).body;
    expect(
      (await api('PUT', `/tenants/${tenant.name}/crowds/base`, { token: manager.secret, body: '1\n2\n', headers: { 'content-type': 'text/csv' } })).status,
    ).toBe(201);
    const definition = {
      steps: [
        { name: 'entry', kind: 'direct', next: 'done' },
        { name: 'done', kind: 'direct' },
      ],
    };
    const workflow = await api('POST', `/tenants/${tenant.name}/workflows`, { token: manager.secret, body: { name: 'wf', definition } });
    const started = await api('POST', `/tenants/${tenant.name}/workflows/${workflow.body.id}/start`, { token: manager.secret, body: { crowd: 'base' } });
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    await api('GET', `/procedures/${started.body.procedureId}?wait=30`);
    expect((await api('POST', `/tenants/${tenant.name}/instances/${started.body.instanceId}/stop`, { token: manager.secret })).status).toBe(202);
    const minted = (await api('POST', `/tenants/${tenant.name}/keys`, { token: manager.secret, body: { name: 'child', scopes: ['read'] } })).body;
    expect((await api('DELETE', `/tenants/${tenant.name}/keys/${manager.id}`)).status).toBe(200);
    expect((await api('PUT', `/tenants/${tenant.name}/limits`, { body: { requestsPerSecond: 100 } })).status).toBe(200);

    const events = await auditOf(tenant.id);
    const summary = events.map((e) => `${e.action} ${e.actor} ${e.target}`);
    expect(summary).toEqual([
      `tenant.create admin:token ${tenant.name}`,
      `key.create admin:token ${tenant.keyId}`,
      `key.create admin:token ${manager.id}`,
      `instance.start key:${manager.id} ${started.body.instanceId}`,
      `instance.stop key:${manager.id} ${started.body.instanceId}`,
      `key.create key:${manager.id} ${minted.id}`,
      `key.revoke admin:token ${manager.id}`,
      `tenant.limits admin:token ${tenant.name}`,
    ]);
    expect(events.find((e) => e.action === 'key.revoke')!.details).toEqual({ alsoRevoked: [minted.id] });
    expect(events.every((e) => !Number.isNaN(Date.parse(e.at)))).toBe(true);
    // Paging: after the first event's seq comes the second.
    const page = await api('GET', `/audit?tenantId=${tenant.id}&after=${events[0].seq}&limit=1`);
    expect(page.body.events.map((e: AuditEvent) => e.seq)).toEqual([events[1].seq]);
    expect(page.body.next).toBe(events[1].seq);

    // The trail outlives the tenant, and a key cannot read it.
    expectError(await api('GET', '/audit', { token: tenant.key }), 403, 'forbidden');
    expect((await api('DELETE', `/tenants/${tenant.name}`)).status).toBe(204);
    expect((await auditOf(tenant.id)).at(-1)).toMatchObject({ action: 'tenant.delete', actor: 'admin:token', target: tenant.name });
  });

  it('records studio sign-in, the session that acted, sign-out and failed sign-ins', async () => {
    const signIn = await api('POST', '/session', { token: null, body: { token: inject('adminToken') } });
    const cookie = signIn.headers.get('set-cookie')!.split(';')[0];
    const name = uniqueName('audited');
    const headers = { cookie, origin: baseUrl(), 'content-type': 'application/json' };
    const created = await api('POST', '/tenants', { token: null, body: JSON.stringify({ name }), headers });
    expect(created.status).toBe(201);
    const [event] = await auditOf(created.body.id);
    expect(event.actor).toMatch(/^admin:session:ses_/);
    const sessionId = event.actor.slice('admin:session:'.length);
    expect((await api('DELETE', '/session', { token: null, headers: { cookie, origin: baseUrl() } })).status).toBe(200);
    expect((await api('POST', '/session', { token: null, body: { token: 'wrong-token-000000' } })).status).toBe(401);
    const sessions = (await api('GET', '/audit?action=session.sign_out&limit=1000')).body.events as AuditEvent[];
    expect(sessions.some((e) => e.target === sessionId && e.actor === `admin:session:${sessionId}`)).toBe(true);
    const failed = (await api('GET', '/audit?action=session.sign_in_failed&limit=1000')).body.events as AuditEvent[];
    expect(failed.at(-1)).toMatchObject({ actor: 'anonymous', target: 'studio' });
    expectError(await api('GET', '/audit?action=nope'), 400, 'validation_failed');
  });
});
