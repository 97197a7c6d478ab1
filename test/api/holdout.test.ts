// Holdout groups over real HTTP (issue 37 §4): a journey holding out a quarter of its users, whose entry step names a
// webhook. The held-out users (read back by the step export's `group=holdout`) never reach the receiver, the others
// do; purchases by both groups convert, and the counts' lift matches the textbook figures computed here from the
// users this test chose. Bad holdouts are 4xx.
import { afterEach, describe, expect, it } from 'vitest';
import { api, createTenant, expectError } from '../helpers/api';
import { waitFor } from '../helpers/wait-for';
import { startReceiver, type Receiver } from '../fixtures/webhooks/receiver';

const receivers: Receiver[] = [];
afterEach(async () => {
  for (const receiver of receivers.splice(0)) await receiver.close();
});

const SECRET = 'whsec_test-secret-0123456789';
const journey = (holdout?: { percent: number; seed?: string }) => ({
  steps: [
    { name: 'welcome', kind: 'direct', enterAction: 'webhook:crm', next: 'wait' },
    { name: 'wait', kind: 'branch', branches: [{ condition: 'event.type == "buy"', next: 'bought' }] },
    { name: 'bought', kind: 'direct' },
  ],
  goal: { condition: 'event.type == "buy"' },
  ...(holdout ? { holdout } : {}),
});
const ids = (text: unknown) =>
  String(text)
    .split('\n')
    .filter(Boolean)
    .map(Number)
    .sort((a, b) => a - b);

describe('holdout groups', () => {
  it('withhold webhooks from the held-out users, count both groups and report the lift', async () => {
    const tenant = await createTenant(2);
    const base = `/tenants/${tenant.name}`;
    expect((await api('PUT', `${base}/limits`, { body: { webhookPrivateAddresses: true } })).status).toBe(200);
    const receiver = await startReceiver({ secret: SECRET, now: () => Date.now(), seed: 5 });
    receivers.push(receiver);
    expect((await api('POST', `${base}/webhooks`, { token: tenant.key, body: { name: 'crm', url: receiver.url, secret: SECRET } })).status).toBe(201);
    const users = Array.from({ length: 400 }, (_, i) => i + 1);
    expect((await api('PUT', `${base}/crowds/launch`, { body: users.join('\n'), headers: { 'content-type': 'text/plain' } })).status).toBeLessThan(300);

    // Validation through validateWorkflow(): a clear 400 naming the holdout.
    const tooMany = expectError(
      await api('POST', `${base}/workflows`, { body: { name: 'greedy', definition: journey({ percent: 60 }) } }),
      400,
      'invalid_workflow',
    );
    expect(tooMany.message).toContain('holdout.percent 60 is over 50');

    const workflow = await api('POST', `${base}/workflows`, { body: { name: 'measured', definition: journey({ percent: 25 }) } });
    expect(workflow.status, JSON.stringify(workflow.body)).toBe(201);
    const started = await api('POST', `${base}/workflows/${workflow.body.id}/start`, { body: { crowd: 'launch' } });
    expect(started.status, JSON.stringify(started.body)).toBeLessThan(300);
    const { instanceId } = started.body;
    const exportIds = async (query: string) => {
      const result = await api('GET', `${base}/instances/${instanceId}/steps/wait/export?${query}`, { token: tenant.key });
      expect(result.status, String(result.body)).toBe(200);
      return { ids: ids(result.body), disposition: result.headers.get('content-disposition') ?? '' };
    };
    const holdout = await waitFor(
      'the instance to run',
      async () => (await api('GET', `${base}/instances/${instanceId}/steps/wait/export?group=holdout`, { token: tenant.key })).body,
      (body) => typeof body === 'string' && body.length > 0,
    ).then(ids);
    const { ids: treated, disposition } = await exportIds('group=treatment');
    expect(disposition).toContain('-wait-treatment-');
    expect([...holdout, ...treated].sort((a, b) => a - b)).toEqual(users);
    expect(holdout.length).toBeGreaterThan(100 - 4 * 9); // 25% of 400, binomial sd ≈ 8.7
    expect(holdout.length).toBeLessThan(100 + 4 * 9);

    // The receiver gets every treated user's welcome and none of the held-out users'.
    const sent = async () =>
      [...receiver.delivered.values()]
        .flatMap((body) => (JSON.parse(body).moves as { to: string; users: number[] }[]).flatMap((m) => (m.to === 'welcome' ? m.users : [])))
        .sort((a, b) => a - b);
    expect(await waitFor('the treated users to be delivered', sent, (got) => got.length >= treated.length)).toEqual(treated);

    // Purchases: 20 held-out users and 60 treated users buy.
    const buyers = { holdout: holdout.slice(0, 20), treated: treated.slice(0, 60) };
    const events = [...buyers.holdout, ...buyers.treated].map((user) => ({ user, type: 'buy' }));
    expect((await api('POST', '/events', { token: tenant.key, body: { tenant: tenant.name, events } })).status).toBe(202);
    const counts = await waitFor(
      'the purchases to convert',
      async () => (await api('GET', `${base}/instances/${instanceId}/counts`, { token: tenant.key })).body,
      (body) => body.converted === 80,
    );
    expect(counts.holdout).toEqual({ entered: holdout.length, converted: 20 });
    // The textbook figures for these users, computed here.
    const [x1, n1, x2, n2] = [60, treated.length, 20, holdout.length];
    const [p1, p2] = [x1 / n1, x2 / n2];
    const se = Math.sqrt((p1 * (1 - p1)) / n1 + (p2 * (1 - p2)) / n2);
    const pooled = (x1 + x2) / (n1 + n2);
    const z = (p1 - p2) / Math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2));
    expect(counts.lift.treatment).toEqual({ users: n1, converted: x1, rate: p1 });
    expect(counts.lift.holdout).toEqual({ users: n2, converted: x2, rate: p2 });
    expect(counts.lift.absolute).toBeCloseTo(p1 - p2, 12);
    expect(counts.lift.relative).toBeCloseTo((p1 - p2) / p2, 12);
    expect(counts.lift.interval.low).toBeCloseTo(p1 - p2 - 1.959964 * se, 6);
    expect(counts.lift.interval.high).toBeCloseTo(p1 - p2 + 1.959964 * se, 6);
    expect(counts.lift.z).toBeCloseTo(z, 10);
    expect((await exportIds('group=holdout')).ids).toEqual(holdout.slice(20));
    const convertedHeld = await api('GET', `${base}/instances/${instanceId}/steps/wait/export?users=converted&group=holdout`, { token: tenant.key });
    expect(ids(convertedHeld.body)).toEqual(buyers.holdout);

    // A group where nobody is held out, a group of capped users, an unknown group: 4xx.
    expectError(
      await api('GET', `${base}/instances/${instanceId}/steps/wait/export?users=capped&group=holdout`, { token: tenant.key }),
      400,
      'validation_failed',
    );
    expectError(await api('GET', `${base}/instances/${instanceId}/steps/wait/export?group=control`, { token: tenant.key }), 400, 'validation_failed');
    // A running instance keeps its groups: a version with another share is refused (409), one with the same share is taken.
    expect((await api('PUT', `${base}/workflows/${workflow.body.id}`, { body: { definition: journey({ percent: 10 }) } })).status).toBe(200);
    const changed = expectError(await api('POST', `${base}/instances/${instanceId}/workflow`, { body: { version: 2 } }), 409, 'conflict');
    expect(changed.message).toContain('a holdout cannot change while an instance runs');
    expect(
      (await api('PUT', `${base}/workflows/${workflow.body.id}`, { body: { definition: { ...journey({ percent: 25 }), stopAt: undefined } } })).status,
    ).toBe(200);
    expect((await api('POST', `${base}/instances/${instanceId}/workflow`, { body: { version: 3 } })).status).toBe(202);

    const plain = await api('POST', `${base}/workflows`, { body: { name: 'plain', definition: journey() } });
    const other = await api('POST', `${base}/workflows/${plain.body.id}/start`, { body: { crowd: 'launch', reentry: 'allow' } });
    expect(other.status, JSON.stringify(other.body)).toBeLessThan(300);
    await waitFor(
      'the plain instance to run',
      async () => (await api('GET', `${base}/instances/${other.body.instanceId}/counts`, { token: tenant.key })).body,
      (body) => body.total === 400,
    );
    expectError(await api('GET', `${base}/instances/${other.body.instanceId}/steps/wait/export?group=holdout`, { token: tenant.key }), 422, 'unprocessable');
    const plainCounts = (await api('GET', `${base}/instances/${other.body.instanceId}/counts`, { token: tenant.key })).body;
    expect(plainCounts.holdout).toBeUndefined();
    expect(plainCounts.lift).toBeUndefined();
  });
});
