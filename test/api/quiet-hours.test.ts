// Quiet hours (issue 37 §3) through the real server: the tenant's rule (PUT/GET/DELETE, every bad input a 400 naming
// its field), a journey's override checked by validateWorkflow(), and a journey started inside the window: users in
// a zone inside it wait (counts `quiet`, export users=quiet) while a user in a zone outside it is sent to at once; in
// drop mode nobody waits. The server runs on the system clock, so the window is placed around the current time in
// UTC; holding until the window opens, with a ManualClock, is test/unit/quiet-hours.test.ts.
import { afterEach, describe, expect, it } from 'vitest';
import { isQuietAt } from '../../core/model/quiet-hours';
import { api, createTenant, expectError } from '../helpers/api';
import { waitFor } from '../helpers/wait-for';
import { startReceiver, type Receiver } from '../fixtures/webhooks/receiver';
import { crmJourney } from '../fixtures/webhooks/journey';

const SECRET = 'whsec_test-secret-0123456789';
const receivers: Receiver[] = [];
afterEach(async () => {
  for (const receiver of receivers.splice(0)) await receiver.close();
});

const hhmm = (ms: number) => new Date(ms).toISOString().slice(11, 16);

/** A window in UTC from an hour ago to two hours from now, and a zone outside it for the next hour. */
function windowAroundNow() {
  const now = Date.now();
  const window = { start: hhmm(now - 3_600_000), end: hhmm(now + 7_200_000), defaultZone: 'UTC' };
  const outside = ['Asia/Tokyo', 'America/Los_Angeles', 'Asia/Kolkata', 'America/New_York'].find(
    (zone) => !isQuietAt(window, now, zone) && !isQuietAt(window, now + 3_600_000, zone),
  );
  if (!outside) throw new Error('no zone outside the window');
  return { window, outside };
}

/** A tenant whose users 1 and 2 have no zone (UTC) and user 3 lives in `zone`, with a receiver's destination "crm". */
async function tenantWithReceiver(zone: string) {
  const tenant = await createTenant(2);
  const base = `/tenants/${tenant.name}`;
  expect((await api('PUT', `${base}/limits`, { body: { webhookPrivateAddresses: true } })).status).toBe(200);
  const receiver = await startReceiver({ secret: SECRET, now: () => Date.now(), seed: 5 });
  receivers.push(receiver);
  expect((await api('POST', `${base}/webhooks`, { token: tenant.key, body: { name: 'crm', url: receiver.url, secret: SECRET } })).status).toBe(201);
  expect((await api('POST', `${base}/profiles`, { token: tenant.key, body: [{ user: 3, attributes: { timezone: zone } }] })).status).toBe(200);
  expect((await api('PUT', `${base}/crowds/launch`, { body: '1\n2\n3', headers: { 'content-type': 'text/plain' } })).status).toBeLessThan(300);
  return { tenant, base, receiver };
}

async function start(base: string, name: string, definition: unknown): Promise<string> {
  const workflow = await api('POST', `${base}/workflows`, { body: { name, definition } });
  expect(workflow.status, JSON.stringify(workflow.body)).toBe(201);
  const started = await api('POST', `${base}/workflows/${workflow.body.id}/start`, { body: { crowd: 'launch' } });
  expect(started.status, JSON.stringify(started.body)).toBeLessThan(300);
  return started.body.instanceId ?? started.body.instance?.id ?? started.body.id;
}

function sentUsers(receiver: Receiver): number[] {
  return [...receiver.delivered.values()].flatMap((body) => (JSON.parse(body).moves as { users: number[] }[]).flatMap((m) => m.users)).sort();
}

describe('quiet hours', () => {
  it('are set, read, replaced and removed; bad input is a 400 naming the field', async () => {
    const tenant = await createTenant(2);
    const base = `/tenants/${tenant.name}/quiet-hours`;
    const token = tenant.key;
    expectError(await api('GET', base, { token }), 404, 'not_found');
    const created = await api('PUT', base, { token, body: { start: '21:00', end: '08:00' } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toMatchObject({ start: '21:00', end: '08:00', mode: 'hold', zoneAttribute: 'timezone', defaultZone: 'UTC' });
    expect((await api('GET', base, { token })).body).toEqual(created.body);
    const replaced = await api('PUT', base, {
      token,
      body: { start: '22:30', end: '07:00', mode: 'drop', zoneAttribute: 'address.tz', defaultZone: 'Europe/Paris' },
    });
    expect(replaced.status, JSON.stringify(replaced.body)).toBe(200);
    expect(replaced.body).toMatchObject({ start: '22:30', end: '07:00', mode: 'drop', zoneAttribute: 'address.tz', defaultZone: 'Europe/Paris' });

    const bad = async (body: unknown) => expectError(await api('PUT', base, { token, body }), 400, 'validation_failed').message;
    expect(await bad({ start: '9pm', end: '08:00' })).toMatch(/^start: "9pm" is not a time/);
    expect(await bad({ start: '21:00', end: '24:00' })).toMatch(/^end: "24:00" is not a time/);
    expect(await bad({ start: '21:00', end: '21:00' })).toMatch(/^end: start and end are both 21:00/);
    expect(await bad({ start: '21:00', end: '08:00', defaultZone: 'Mars/Olympus' })).toMatch(/^defaultZone: "Mars\/Olympus" is not an IANA time zone/);
    expect(await bad({ start: '21:00', end: '08:00', mode: 'later' })).toMatch(/^mode: /);
    expect(await bad({ start: '21:00' })).toMatch(/^end: /);
    expect(await bad({ start: '21:00', end: '08:00', extra: true })).toContain('extra');
    expect(await bad({ start: '21:00', end: '08:00', zoneAttribute: 'profile.timezone' })).toMatch(/^zoneAttribute: /);
    expectError(await api('PUT', base, { token, body: '{"start":', headers: { 'content-type': 'application/json' } }), 400, 'invalid_json');
    // A read-only key reads the rule but cannot change it.
    const reader = await api('POST', `/tenants/${tenant.name}/keys`, { body: { name: 'reader', scopes: ['read'] } });
    expect((await api('GET', base, { token: reader.body.secret })).status).toBe(200);
    expectError(await api('PUT', base, { token: reader.body.secret, body: { start: '21:00', end: '08:00' } }), 403, 'forbidden');

    expect((await api('DELETE', base, { token })).status).toBe(204);
    expectError(await api('GET', base, { token }), 404, 'not_found');
    expectError(await api('DELETE', base, { token }), 404, 'not_found');
  });

  it('a journey’s own quiet hours are checked with the rest of its definition', async () => {
    const tenant = await createTenant(2);
    const save = (quietHours: unknown) =>
      api('POST', `/tenants/${tenant.name}/workflows`, {
        token: tenant.key,
        body: { name: `q-${Math.random()}`.slice(0, 12), definition: { ...crmJourney(), quietHours } },
      });
    const refused = expectError(await save({ start: '21:00', end: '21:00', defaultZone: 'Nowhere/City' }), 400, 'invalid_workflow');
    expect((refused.details as { problems: { code: string; message: string }[] }).problems).toEqual([
      { step: null, code: 'bad_quiet_hours', message: expect.stringContaining('quietHours.end: start and end are both 21:00') },
      { step: null, code: 'bad_quiet_hours', message: expect.stringContaining('quietHours.defaultZone: "Nowhere/City" is not an IANA time zone') },
    ]);
    expect((await save(false)).status).toBe(201);
    const own = await save({ start: '22:00', end: '07:00', mode: 'drop' });
    expect(own.status, JSON.stringify(own.body)).toBe(201);
  });

  it('hold the deliveries of users inside the window in their zone while others are sent; drop mode drops them', async () => {
    const { window, outside } = windowAroundNow();
    const { tenant, base, receiver } = await tenantWithReceiver(outside);
    expect((await api('PUT', `${base}/quiet-hours`, { token: tenant.key, body: window })).status).toBe(201);
    const held = await start(base, 'held', crmJourney());
    await waitFor(
      'user 3 (outside the window in their zone) to be delivered',
      async () => sentUsers(receiver),
      (users) => users.includes(3),
    );
    const counts = await waitFor(
      'users 1 and 2 waiting for quiet hours to end',
      async () => (await api('GET', `${base}/instances/${held}/counts`, { token: tenant.key })).body,
      (body) => body.quiet?.welcome?.waiting === 2,
    );
    expect(counts.steps).toMatchObject({ welcome: 3 });
    expect(counts.quiet).toEqual({ welcome: { waiting: 2, dropped: 0 } });
    const exported = await api('GET', `${base}/instances/${held}/steps/welcome/export?users=quiet`, { token: tenant.key });
    expect(exported.status).toBe(200);
    expect(String(exported.body).trim().split('\n')).toEqual(['1', '2']);
    expect(exported.headers.get('content-disposition')).toContain('-welcome-quiet-');
    expectError(await api('GET', `${base}/instances/${held}/steps/welcome/export?users=quiet&group=holdout`, { token: tenant.key }), 400, 'validation_failed');
    expect(sentUsers(receiver)).toEqual([3]);

    // The same journey with its own rule in drop mode: nobody waits, two deliveries dropped.
    const dropped = await start(base, 'dropped', { ...crmJourney(), quietHours: { ...window, mode: 'drop' } });
    const dropCounts = await waitFor(
      'the drop journey’s deliveries to be dropped',
      async () => (await api('GET', `${base}/instances/${dropped}/counts`, { token: tenant.key })).body,
      (body) => body.quiet?.welcome?.dropped === 2,
    );
    expect(dropCounts.quiet).toEqual({ welcome: { waiting: 0, dropped: 2 } });
    await waitFor(
      'user 3 of the drop journey to be delivered',
      async () => sentUsers(receiver),
      (users) => users.length === 2,
    );
    expect(sentUsers(receiver)).toEqual([3, 3]);
  });
});
