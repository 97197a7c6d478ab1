import { describe, expect, it } from 'vitest';
import { api, createTenant, expectError } from '../helpers/api';
import { waitFor } from '../helpers/wait-for';

// Users wait for a purchase; the goal is any purchase of 10 or more.
const definition = {
  steps: [
    { name: 'wait', kind: 'branch', branches: [{ condition: 'event.type == "purchase"', next: 'bought' }], timeout: { after: '7d', next: 'lapsed' } },
    { name: 'bought', kind: 'direct' },
    { name: 'lapsed', kind: 'direct' },
  ],
  goal: { condition: 'event.type == "purchase" && event.data.amount >= 10' },
};

describe('goal conversions and counts history over HTTP', () => {
  it('counts and exports converted users per step, and answers the counts history of a new instance', async () => {
    const tenant = await createTenant(2);
    const base = `/tenants/${tenant.name}`;
    expect((await api('PUT', `${base}/crowds/c`, { body: '1\n2\n3\n4', headers: { 'content-type': 'text/plain' } })).status).toBeLessThan(300);
    const created = await api('POST', `${base}/workflows`, { body: { name: 'goal', definition } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const started = await api('POST', `${base}/workflows/${created.body.id}/start`, { token: tenant.key, body: { crowd: 'c' } });
    const instanceId: string = started.body.instanceId;
    await waitFor(
      'the instance running',
      () => api('GET', `${base}/instances/${instanceId}`),
      (r) => r.body.state === 'running',
    );

    const events = [
      { user: 1, type: 'purchase', data: { amount: 20 } },
      { user: 2, type: 'purchase', data: { amount: 5 } },
    ];
    expect((await api('POST', '/events', { token: tenant.key, body: { events } })).status).toBe(202);
    const counts = await waitFor(
      'the two purchases applied',
      () => api('GET', `${base}/instances/${instanceId}/counts`),
      (r) => r.body.steps.bought === 2,
    );
    expect(counts.body).toMatchObject({ converted: 1, convertedFrom: { wait: 1 }, steps: { wait: 2, bought: 2 } });
    const exported = await api('GET', `${base}/instances/${instanceId}/steps/wait/export?format=json&users=converted`);
    expect(exported.body).toEqual([1]);
    expectError(await api('GET', `${base}/instances/${instanceId}/steps/wait/export?users=all`), 400, 'validation_failed');

    // A new instance is sampled at once; then once a minute.
    const history = await waitFor(
      'the first counts sample',
      () => api('GET', `${base}/instances/${instanceId}/counts/history?step=wait,bought`),
      (r) => r.body.points?.length > 0,
    );
    expect(history.status, JSON.stringify(history.body)).toBe(200);
    expect(history.body).toMatchObject({ instanceId, resolution: 'minute' });
    expect(Object.keys(history.body.points[0].steps).sort()).toEqual(['bought', 'wait']);
    expect(typeof history.body.points[0].entered).toBe('number');

    const later = new Date(Date.now() + 3_600_000).toISOString();
    expect(expectError(await api('GET', `${base}/instances/${instanceId}/counts/history?from=${later}`), 400, 'bad_request').message).toMatch(
      /^from .* must be before to/,
    );
    expectError(await api('GET', `${base}/instances/${instanceId}/counts/history?resolution=week`), 400, 'validation_failed');
    expectError(await api('GET', `${base}/instances/in_unknown/counts/history`), 404, 'not_found');
  });
});
