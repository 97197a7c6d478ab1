import { afterEach, describe, expect, it } from 'vitest';
import { api, createTenant, expectError } from '../helpers/api';
import { waitFor } from '../helpers/wait-for';
import { startReceiver, type Receiver } from '../fixtures/webhooks/receiver';
import { crmJourney } from '../fixtures/webhooks/journey';

const receivers: Receiver[] = [];
afterEach(async () => {
  for (const receiver of receivers.splice(0)) await receiver.close();
});

describe('frequency caps', () => {
  it('are created, listed, read, changed and deleted; bad input is a 4xx with {error: {code, message}}', async () => {
    const tenant = await createTenant(2);
    const base = `/tenants/${tenant.name}/frequency-caps`;
    const token = tenant.key;
    expect((await api('POST', `/tenants/${tenant.name}/webhooks`, { token, body: { name: 'sms', url: 'https://receiver.example/sms' } })).status).toBe(201);

    const created = await api('POST', base, {
      token,
      body: { name: 'daily', maxDeliveries: 2, window: '1d', exempt: { journeys: ['receipts'], steps: [{ journey: 'welcome', step: 'otp' }] } },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toMatchObject({
      name: 'daily',
      maxDeliveries: 2,
      window: '1d',
      windowMs: 86_400_000,
      destination: null,
      exempt: { journeys: ['receipts'], steps: [{ journey: 'welcome', step: 'otp' }] },
    });
    const sms = await api('POST', base, { token, body: { name: 'sms-hourly', maxDeliveries: 1, window: '60m', destination: 'sms' } });
    expect(sms.status, JSON.stringify(sms.body)).toBe(201);
    expect(sms.body).toMatchObject({ window: '1h', destination: 'sms', exempt: { journeys: [], steps: [] } });

    const list = await api('GET', base, { token });
    expect(list.status).toBe(200);
    expect(list.body.caps.map((c: { name: string }) => c.name)).toEqual(['daily', 'sms-hourly']);
    expect((await api('GET', `${base}/daily`, { token })).body).toEqual(created.body);

    const patched = await api('PATCH', `${base}/daily`, { token, body: { maxDeliveries: 3, window: '12h' } });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body).toMatchObject({ maxDeliveries: 3, window: '12h', windowMs: 43_200_000, exempt: created.body.exempt });

    // Bad input.
    const bad = (body: unknown) => api('POST', base, { token, body });
    const missing = expectError(await bad({ name: 'x', window: '1d' }), 400, 'validation_failed');
    expect(missing.message).toContain('maxDeliveries');
    expect(expectError(await bad({ name: 'x', maxDeliveries: 2, window: '1 day' }), 400, 'validation_failed').message).toContain('not a window');
    expect(expectError(await bad({ name: 'x', maxDeliveries: 2, window: '32d' }), 400, 'validation_failed').message).toContain('1m to 31d');
    expectError(await bad({ name: 'x', maxDeliveries: 0, window: '1d' }), 400, 'validation_failed');
    expectError(await bad({ name: 'x', maxDeliveries: 51, window: '1d' }), 400, 'validation_failed');
    expectError(await bad({ name: 'x', maxDeliveries: 1.5, window: '1d' }), 400, 'validation_failed');
    expectError(await bad({ name: 'x', maxDeliveries: 2, window: '1d', extra: true }), 400, 'validation_failed');
    expectError(await bad({ name: 'bad name!', maxDeliveries: 2, window: '1d' }), 400, 'validation_failed');
    expectError(await bad({ name: 'x', maxDeliveries: 2, window: '1d', exempt: { steps: [{ journey: 'welcome' }] } }), 400, 'validation_failed');
    expect(expectError(await bad({ name: 'x', maxDeliveries: 2, window: '1d', destination: 'nope' }), 400, 'validation_failed').message).toContain(
      'no webhook destination named "nope"',
    );
    expectError(await api('POST', base, { token, body: '{"name":', headers: { 'content-type': 'application/json' } }), 400, 'invalid_json');
    expectError(await bad({ name: 'daily', maxDeliveries: 1, window: '1d' }), 409, 'conflict');
    expectError(await api('PATCH', `${base}/daily`, { token, body: { window: 'soon' } }), 400, 'validation_failed');
    expectError(await api('PATCH', `${base}/daily`, { token, body: { name: 'renamed' } }), 400, 'validation_failed');
    expectError(await api('PATCH', `${base}/nope`, { token, body: { maxDeliveries: 1 } }), 404, 'not_found');
    expectError(await api('GET', `${base}/nope`, { token }), 404, 'not_found');
    // A read-only key reads caps but cannot change them.
    const reader = await api('POST', `/tenants/${tenant.name}/keys`, { body: { name: 'reader', scopes: ['read'] } });
    expect((await api('GET', base, { token: reader.body.secret })).status).toBe(200);
    expectError(await api('DELETE', `${base}/daily`, { token: reader.body.secret }), 403, 'forbidden');

    expect((await api('DELETE', `${base}/daily`, { token })).status).toBe(204);
    expectError(await api('GET', `${base}/daily`, { token }), 404, 'not_found');
    expectError(await api('DELETE', `${base}/daily`, { token }), 404, 'not_found');
  });

  it('skip a delivery past the cap while the user still moves; counts and the step export show who was capped', async () => {
    const tenant = await createTenant(2);
    const base = `/tenants/${tenant.name}`;
    expect((await api('PUT', `${base}/limits`, { body: { webhookPrivateAddresses: true } })).status).toBe(200);
    const receiver = await startReceiver({ secret: 'whsec_test-secret-0123456789', now: () => Date.now(), seed: 3 });
    receivers.push(receiver);
    const hook = await api('POST', `${base}/webhooks`, {
      token: tenant.key,
      body: { name: 'crm', url: receiver.url, secret: 'whsec_test-secret-0123456789' },
    });
    expect(hook.status, JSON.stringify(hook.body)).toBe(201);
    expect((await api('POST', `${base}/frequency-caps`, { token: tenant.key, body: { name: 'one-a-day', maxDeliveries: 1, window: '1d' } })).status).toBe(201);
    const journey = crmJourney();
    expect((await api('PUT', `${base}/crowds/launch`, { body: '1\n2\n3', headers: { 'content-type': 'text/plain' } })).status).toBeLessThan(300);
    const workflow = await api('POST', `${base}/workflows`, { body: { name: 'capped', definition: journey } });
    expect(workflow.status, JSON.stringify(workflow.body)).toBe(201);
    const started = await api('POST', `${base}/workflows/${workflow.body.id}/start`, { body: { crowd: 'launch' } });
    expect(started.status, JSON.stringify(started.body)).toBeLessThan(300);
    const instanceId = started.body.instanceId ?? started.body.instance?.id ?? started.body.id;
    await waitFor(
      'the start to be delivered',
      async () => receiver.delivered.size,
      (n) => n >= 1,
    );
    expect((await api('POST', '/events', { token: tenant.key, body: { tenant: tenant.name, events: [{ user: 2, type: 'buy' }] } })).status).toBe(202);
    const counts = await waitFor(
      'user 2 capped at bought',
      async () => (await api('GET', `${base}/instances/${instanceId}/counts`, { token: tenant.key })).body,
      (body) => body.capped !== undefined,
    );
    expect(counts.steps).toMatchObject({ welcome: 2, bought: 1 });
    expect(counts.capped).toEqual({ bought: { users: 1, skipped: 1 } });
    const exported = await api('GET', `${base}/instances/${instanceId}/steps/bought/export?users=capped`, { token: tenant.key });
    expect(exported.status).toBe(200);
    expect(String(exported.body).trim()).toBe('2');
    expect(exported.headers.get('content-disposition')).toContain('-bought-capped-');
    expectError(await api('GET', `${base}/instances/${instanceId}/steps/nope/export?users=capped`, { token: tenant.key }), 404, 'not_found');
    // The receiver got the three entering users (one move per partition) and never the capped move.
    const sent = [...receiver.delivered.values()].flatMap((body) =>
      (JSON.parse(body).moves as { to: string; users: number[] }[]).flatMap((m) => m.users.map((u) => `${m.to}:${u}`)),
    );
    expect(sent.sort()).toEqual(['welcome:1', 'welcome:2', 'welcome:3']);
  });
});
