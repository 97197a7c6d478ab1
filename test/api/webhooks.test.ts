import { afterEach, describe, expect, it } from 'vitest';
import { api, createTenant, expectError } from '../helpers/api';
import { waitFor } from '../helpers/wait-for';
import { startReceiver, type Receiver } from '../fixtures/webhooks/receiver';
import { crmJourney } from '../fixtures/webhooks/journey';

// A journey whose entry step sends every entering user to the "crm" destination, then an event moves user 1 on into
// a step that sends to it too; the server's own pump and procedure runner deliver to a real local receiver.
const journey = crmJourney('send_receipt,webhook:crm');

const receivers: Receiver[] = [];
afterEach(async () => {
  for (const receiver of receivers.splice(0)) await receiver.close();
});

/** The admin allows (or no longer allows) the tenant's destinations on private addresses: the receivers run on 127.0.0.1. */
async function allowPrivateAddresses(tenant: string, allowed: boolean): Promise<void> {
  const limits = await api('PUT', `/tenants/${tenant}/limits`, { body: { webhookPrivateAddresses: allowed || null } });
  expect(limits.status, JSON.stringify(limits.body)).toBe(200);
  expect(limits.body.webhookPrivateAddresses).toBe(allowed);
}

describe('webhook destinations', () => {
  it('delivers a started crowd and a later move, signed, in batches; logs them; replays one under the same id', async () => {
    const tenant = await createTenant(2);
    const base = `/tenants/${tenant.name}`;
    await allowPrivateAddresses(tenant.name, true);
    let secret = '';
    const receiver = await startReceiver({ secret: () => secret, now: () => Date.now(), seed: 7 });
    receivers.push(receiver);
    const created = await api('POST', `${base}/webhooks`, {
      token: tenant.key,
      body: { name: 'crm', url: 'http://127.0.0.1:9/not-yet', batchSize: 2, headers: { 'X-Receiver-Token': 'abc' } },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    secret = created.body.secret;
    expect(secret).toMatch(/^whsec_/);
    expect(created.body).toMatchObject({
      name: 'crm',
      headerNames: ['X-Receiver-Token'],
      secretSet: true,
      batchSize: 2,
      allNotifications: false,
      actionTag: 'webhook:crm',
    });
    const shown = await api('GET', `${base}/webhooks/crm`, { token: tenant.key });
    expect(shown.status).toBe(200);
    expect(JSON.stringify(shown.body)).not.toContain(secret);
    expect(JSON.stringify(shown.body)).not.toContain('abc');
    const patched = await api('PATCH', `${base}/webhooks/crm`, { token: tenant.key, body: { url: receiver.url } });
    expect(patched.body).toMatchObject({ url: receiver.url, batchSize: 2 });

    expect((await api('PUT', `${base}/crowds/launch`, { body: '1\n2\n3\n4\n5', headers: { 'content-type': 'text/plain' } })).status).toBeLessThan(300);
    const workflow = await api('POST', `${base}/workflows`, { body: { name: 'hooked', definition: journey } });
    expect(workflow.status, JSON.stringify(workflow.body)).toBe(201);
    expect((await api('POST', `${base}/workflows/${workflow.body.id}/start`, { body: { crowd: 'launch' } })).status).toBeLessThan(300);
    await waitFor(
      'the start to be delivered in 3 batches of ≤ 2',
      async () => receiver.delivered.size,
      (n) => n >= 3,
    );
    const events = await api('POST', '/events', { token: tenant.key, body: { tenant: tenant.name, events: [{ user: 1, type: 'buy' }] } });
    expect(events.status).toBe(202);
    const bodies = await waitFor(
      'the move of user 1',
      async () => [...receiver.delivered.values()].map((b) => JSON.parse(b)),
      (b) => b.length >= 4,
    );
    expect(receiver.received.every((r) => r.verified)).toBe(true);
    const moves = bodies.flatMap((b) => b.moves);
    expect(
      moves
        .filter((m) => m.to === 'welcome')
        .flatMap((m) => m.users)
        .sort(),
    ).toEqual([1, 2, 3, 4, 5]);
    expect(moves.filter((m) => m.to === 'bought')).toMatchObject([{ from: 'welcome', users: [1], enterAction: 'send_receipt,webhook:crm' }]);

    const log = await waitFor(
      'the log to show 4 delivered',
      async () => (await api('GET', `${base}/webhooks/crm/deliveries`, { token: tenant.key })).body,
      (body) => body.deliveries?.length === 4 && body.deliveries.every((d: { status: string }) => d.status === 'delivered'),
    );
    const page = await api('GET', `${base}/webhooks/crm/deliveries?limit=3`, { token: tenant.key });
    expect(page.body.deliveries.map((d: { id: string }) => d.id)).toEqual(log.deliveries.slice(0, 3).map((d: { id: string }) => d.id));
    const rest = await api('GET', `${base}/webhooks/crm/deliveries?limit=3&before=${page.body.next}`, { token: tenant.key });
    expect(rest.body.deliveries.map((d: { id: string }) => d.id)).toEqual([log.deliveries[3].id]);
    const one = await api('GET', `${base}/webhooks/crm/deliveries/${log.deliveries[0].id}`, { token: tenant.key });
    expect(one.body).toMatchObject({
      id: log.deliveries[0].id,
      status: 'delivered',
      attempts: 1,
      lastStatus: 200,
      body: { id: log.deliveries[0].id, destination: 'crm' },
    });

    const replay = await api('POST', `${base}/webhooks/crm/deliveries/${log.deliveries[0].id}/replay`, { token: tenant.key });
    expect(replay.status, JSON.stringify(replay.body)).toBe(202);
    expect(replay.body).toMatchObject({ status: 'pending', replays: 1 });
    await waitFor(
      'the replay',
      async () => receiver.received.filter((r) => r.id === log.deliveries[0].id).length,
      (n) => n === 2,
    );

    expect((await api('DELETE', `${base}/webhooks/crm`, { token: tenant.key })).status).toBe(204);
    expectError(await api('GET', `${base}/webhooks/crm/deliveries`, { token: tenant.key }), 404, 'not_found');
  });

  it('refuses bad destinations, unknown names and ids, and another tenant, with a 4xx naming the problem', async () => {
    const [tenant, other] = [await createTenant(2), await createTenant(2)];
    const base = `/tenants/${tenant.name}`;
    const post = (body: unknown) => api('POST', `${base}/webhooks`, { token: tenant.key, body });
    expect(expectError(await post({ name: 'a', url: 'ftp://example.com/x' }), 400, 'validation_failed').message).toMatch(/^url: only http and https/);
    expect(expectError(await post({ name: 'a', url: 'not a url' }), 400, 'validation_failed').message).toMatch(/^url/);
    expect(expectError(await post({ name: 'a', url: 'https://user:pw@example.com/' }), 400, 'validation_failed').message).toMatch(/credentials/);
    expect(expectError(await post({ name: 'a', url: 'https://example.com/', batchSize: 0 }), 400, 'validation_failed').message).toMatch(/^batchSize/);
    expect(expectError(await post({ name: 'a', url: 'https://example.com/', timeoutMs: 60_000 }), 400, 'validation_failed').message).toMatch(/^timeoutMs/);
    expect(
      expectError(await post({ name: 'a', url: 'https://example.com/', headers: { 'Content-Type': 'text/plain' } }), 400, 'validation_failed').message,
    ).toMatch(/set by Crowdflow/);
    expect(expectError(await post({ name: 'a', url: 'https://example.com/', headers: { 'X-A': 'a\r\nb' } }), 400, 'validation_failed').message).toMatch(
      /line breaks/,
    );
    expect(expectError(await post({ name: 'a', url: 'https://example.com/', secret: 'short' }), 400, 'validation_failed').message).toMatch(/^secret/);
    expect(expectError(await post({ name: '../x', url: 'https://example.com/' }), 400, 'validation_failed').message).toMatch(/^name/);
    expect((await post({ name: 'a', url: 'https://example.com/', secret: 'whsec_given-by-the-caller-000' })).body.secret).toBeUndefined();
    expectError(await post({ name: 'a', url: 'https://example.com/' }), 409, 'conflict');
    expectError(await api('GET', `${base}/webhooks/nope`, { token: tenant.key }), 404, 'not_found');
    expectError(await api('PATCH', `${base}/webhooks/nope`, { token: tenant.key, body: { batchSize: 5 } }), 404, 'not_found');
    expect(expectError(await api('GET', `${base}/webhooks/a/deliveries/bogus`, { token: tenant.key }), 400, 'validation_failed').message).toMatch(/^id/);
    expectError(await api('GET', `${base}/webhooks/a/deliveries/wh_0123456789abcdef-1-0`, { token: tenant.key }), 404, 'not_found');
    // A lost report's id (…-<watermark>-lost) and a page cursor at its offset -1 are well-formed: not found here, not refused.
    expectError(await api('GET', `${base}/webhooks/a/deliveries/wh_0123456789abcdef-7-lost`, { token: tenant.key }), 404, 'not_found');
    expect((await api('GET', `${base}/webhooks/a/deliveries?before=7.-1`, { token: tenant.key })).body).toEqual({ deliveries: [] });
    expectError(await api('POST', `${base}/webhooks/a/deliveries/wh_0123456789abcdef-1-0/replay`, { token: tenant.key }), 404, 'not_found');
    expect(expectError(await api('GET', `${base}/webhooks/a/deliveries?status=lost`, { token: tenant.key }), 400, 'validation_failed').message).toMatch(
      /^status/,
    );
    expectError(await api('GET', `${base}/webhooks/a`, { token: other.key }), 404, 'not_found');
    expectError(await api('GET', `${base}/webhooks`, { token: null }), 401, 'unauthorized');
  });

  it('refuses private, loopback and link-local destinations until the admin allows them; a delivery is refused when the allowance goes', async () => {
    const tenant = await createTenant(2);
    const base = `/tenants/${tenant.name}`;
    const post = (url: string) => api('POST', `${base}/webhooks`, { token: tenant.key, body: { name: 'crm', url } });
    for (const [url, reason] of [
      ['http://127.0.0.1:9/hook', /^url: 127\.0\.0\.1 is a loopback address/],
      ['http://2130706433/hook', /^url: 127\.0\.0\.1 is a loopback address/],
      ['http://localhost:3000/hook', /^url: localhost names this machine/],
      ['http://[::1]/hook', /^url: ::1 is a loopback address/],
      ['http://169.254.169.254/latest/meta-data', /^url: 169\.254\.169\.254 is a link-local address/],
      ['https://10.1.2.3/hook', /^url: 10\.1\.2\.3 is a private address/],
    ] as const) {
      const error = expectError(await post(url), 400, 'private_address');
      expect(error.message, url).toMatch(reason);
      expect(error.message).toMatch(/CROWDFLOW_WEBHOOK_ALLOW_PRIVATE=1, or the tenant limit webhookPrivateAddresses/);
    }
    expect((await post('https://hooks.example.com/in')).status).toBe(201);
    // A change to a private URL is refused whole: the destination keeps its URL.
    expectError(await api('PATCH', `${base}/webhooks/crm`, { token: tenant.key, body: { url: 'http://192.168.0.10/', batchSize: 7 } }), 400, 'private_address');
    expect((await api('GET', `${base}/webhooks/crm`, { token: tenant.key })).body).toMatchObject({ url: 'https://hooks.example.com/in', batchSize: 10_000 });
    // A tenant cannot allow itself: limits are the admin's.
    expectError(await api('PUT', `${base}/limits`, { token: tenant.key, body: { webhookPrivateAddresses: true } }), 403, 'forbidden');

    // Allowed: a failing local receiver. Its answer is in the log for the admin only.
    await allowPrivateAddresses(tenant.name, true);
    const receiver = await startReceiver({ secret: 'whsec_private-test-secret-000', now: () => Date.now(), seed: 11, mix: { fail: 1, hang: 0, slow: 0 } });
    receivers.push(receiver);
    const patched = await api('PATCH', `${base}/webhooks/crm`, {
      token: tenant.key,
      body: { url: receiver.url, secret: 'whsec_private-test-secret-000', headers: { authorization: 'Bearer echoed-by-receivers' } },
    });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect((await api('PUT', `${base}/crowds/launch`, { body: '1\n2', headers: { 'content-type': 'text/plain' } })).status).toBeLessThan(300);
    const workflow = await api('POST', `${base}/workflows`, {
      body: { name: 'hooked', definition: { steps: [{ name: 'in', kind: 'direct', enterAction: 'webhook:crm' }] } },
    });
    expect((await api('POST', `${base}/workflows/${workflow.body.id}/start`, { body: { crowd: 'launch' } })).status).toBeLessThan(300);
    const log = (token?: string) => api('GET', `${base}/webhooks/crm/deliveries`, { token });
    const [failing] = (
      await waitFor(
        'a failed attempt',
        async () => (await log()).body,
        (body) => body.deliveries?.[0]?.lastStatus === 500,
      )
    ).deliveries;
    expect(failing).toMatchObject({ type: 'moves', lastError: 'HTTP 500', lastResponse: 'receiver failed on purpose' });
    const [seenByKey] = (await log(tenant.key)).body.deliveries;
    expect(seenByKey).toMatchObject({ id: failing.id, lastError: 'HTTP 500' });
    expect(seenByKey).not.toHaveProperty('lastResponse');
    expect((await api('GET', `${base}/webhooks/crm/deliveries/${failing.id}`, { token: tenant.key })).body).not.toHaveProperty('lastResponse');

    // The allowance goes: the next attempt is refused without a request, and the delivery fails at once.
    await allowPrivateAddresses(tenant.name, false);
    const refused = await waitFor(
      'the refused attempt',
      async () => (await api('GET', `${base}/webhooks/crm/deliveries/${failing.id}`, { token: tenant.key })).body,
      (delivery) => delivery.status === 'failed',
    );
    expect(refused.lastError).toMatch(/^refused: 127\.0\.0\.1 is a loopback address/);
    expect(receiver.received.filter((r) => r.id === failing.id)).toHaveLength(refused.attempts - 1);
    expect((await api('DELETE', `${base}/webhooks/crm`, { token: tenant.key })).status).toBe(204);
  });
});
