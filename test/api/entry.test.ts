import { describe, expect, it } from 'vitest';
import { api, createTenant, expectError } from '../helpers/api';
import { waitFor } from '../helpers/wait-for';

// "When they sign up (pro plan), wait for a purchase"; users who bought may enter again on their next sign-up.
const definition = {
  steps: [
    { name: 'wait', kind: 'branch', branches: [{ condition: 'event.type == "purchase"', next: 'bought' }], timeout: { after: '7d', next: 'lapsed' } },
    { name: 'bought', kind: 'direct' },
    { name: 'lapsed', kind: 'direct' },
  ],
  entry: { event: 'signup', condition: 'event.data.plan == "pro"', reentry: 'again' },
};

async function countsOnceSettled(base: string, instanceId: string, entered: number) {
  const read = () => api('GET', `${base}/instances/${instanceId}/counts`);
  return (await waitFor(`${entered} entered`, read, (counts) => counts.body.entered === entered)).body;
}

describe('event-triggered entry over HTTP', () => {
  it('saves a workflow with an entry trigger, starts it without a crowd, and users enter through POST /events', async () => {
    const tenant = await createTenant(2);
    const base = `/tenants/${tenant.name}`;
    const bad = await api('POST', `${base}/workflows`, {
      body: { name: 'bad', definition: { ...definition, entry: { event: 'signup', condition: 'event.data.plan ==', reentry: 'never' } } },
    });
    const problems = (expectError(bad, 400, 'invalid_workflow').details as { problems: { step: string | null; code: string }[] }).problems;
    expect(problems.map((p) => [p.step, p.code])).toEqual([
      [null, 'invalid_field'],
      [null, 'bad_condition'],
    ]);

    const created = await api('POST', `${base}/workflows`, { body: { name: 'signup-journey', definition } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const plain = await api('POST', `${base}/workflows`, { body: { name: 'plain', definition: { steps: definition.steps } } });
    const refused = expectError(await api('POST', `${base}/workflows/${plain.body.id}/start`, { token: tenant.key, body: {} }), 400, 'validation_failed');
    expect(refused.message).toMatch(/^crowd: required, because version 1 of workflow "plain" has no entry trigger$/);

    const started = await api('POST', `${base}/workflows/${created.body.id}/start`, { token: tenant.key, body: {} });
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    const instanceId: string = started.body.instanceId;
    const read = () => api('GET', `${base}/instances/${instanceId}`);
    const view = (await waitFor('the instance running', read, (got) => got.body.state === 'running')).body;
    expect(view).toMatchObject({ crowdName: '', userCount: 0 });

    const events = [
      { user: 1, type: 'signup', data: { plan: 'pro' } },
      { user: 2, type: 'signup', data: { plan: 'free' } },
      { user: 3, type: 'signup', data: { plan: 'pro' } },
      { user: 3, type: 'purchase' },
    ];
    expect((await api('POST', '/events', { token: tenant.key, body: { events } })).status).toBe(202);
    expect(await countsOnceSettled(base, instanceId, 2)).toMatchObject({ total: 2, entered: 2, steps: { wait: 1, bought: 1, lapsed: 0 } });

    // User 3 rests in the exit step `bought`: with reentry `again` their next sign-up lets them in again.
    expect((await api('POST', '/events', { token: tenant.key, body: { events: [{ user: 3, type: 'signup', data: { plan: 'pro' } }] } })).status).toBe(202);
    expect(await countsOnceSettled(base, instanceId, 3)).toMatchObject({ total: 2, entered: 3, steps: { wait: 2, bought: 0 }, edges: { 'bought->wait': 1 } });
    const waiting = await api('GET', `${base}/instances/${instanceId}/steps/wait/export?format=json`);
    expect(waiting.body).toEqual([1, 3]);
  });
});
