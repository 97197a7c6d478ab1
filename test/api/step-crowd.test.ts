import { describe, expect, it } from 'vitest';
import { api, createTenant, expectError } from '../helpers/api';

// Step → crowd (issue 38 §3): the users at a step, or those who converted from it, saved as a new crowd in one call.
const definition = {
  steps: [
    { name: 'wait', kind: 'branch', branches: [{ condition: 'event.type == "purchase"', next: 'bought' }] },
    { name: 'bought', kind: 'direct' },
  ],
  goal: { condition: 'event.type == "purchase"' },
};

async function startedInstance(base: string, body: object, crowd: string): Promise<string> {
  const created = await api('POST', `${base}/workflows`, { body });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const instanceId: string = (await api('POST', `${base}/workflows/${created.body.id}/start`, { body: { crowd } })).body.instanceId;
  await expect.poll(async () => (await api('GET', `${base}/instances/${instanceId}`)).body.state, { timeout: 20_000 }).toBe('running');
  return instanceId;
}

describe('step → crowd', () => {
  it('saves the users at a step, or those converted from it, as a new crowd that exports the same IDs', async () => {
    const tenant = await createTenant(2);
    const base = `/tenants/${tenant.name}`;
    expect((await api('PUT', `${base}/crowds/trial`, { body: '1\n2\n3\n4\n5\n6', headers: { 'content-type': 'text/plain' } })).status).toBe(201);
    const instanceId = await startedInstance(base, { name: 'Sale', definition }, 'trial');
    const sent = await api('POST', '/events', { token: tenant.key, body: { events: [2, 5].map((user) => ({ user, type: 'purchase' })) } });
    expect(sent.status).toBe(202);
    await expect.poll(async () => (await api('GET', `${base}/instances/${instanceId}/counts`)).body.steps.bought, { timeout: 20_000 }).toBe(2);

    const saved = await api('POST', `${base}/instances/${instanceId}/steps/wait/crowd`, { token: tenant.key, body: { name: 'still-waiting' } });
    expect(saved.status, JSON.stringify(saved.body)).toBe(201);
    expect(saved.body).toMatchObject({ name: 'still-waiting', count: 4 });
    const converted = await api('POST', `${base}/instances/${instanceId}/steps/wait/crowd`, {
      token: tenant.key,
      body: { name: 'buyers', users: 'converted' },
    });
    expect(converted.body).toMatchObject({ name: 'buyers', count: 2 });
    const ids = async (crowd: string) => (await api('GET', `${base}/crowds/${crowd}/export?format=json`, { token: tenant.key })).body;
    expect(await ids('still-waiting')).toEqual([1, 3, 4, 6]);
    expect(await ids('buyers')).toEqual([2, 5]);

    // The crowd is a copy: users moving on later leave it as it was.
    await api('POST', '/events', { token: tenant.key, body: { events: [{ user: 1, type: 'purchase' }] } });
    await expect.poll(async () => (await api('GET', `${base}/instances/${instanceId}/counts`)).body.steps.bought, { timeout: 20_000 }).toBe(3);
    expect(await ids('still-waiting')).toEqual([1, 3, 4, 6]);

    const taken = expectError(
      await api('POST', `${base}/instances/${instanceId}/steps/bought/crowd`, { token: tenant.key, body: { name: 'buyers' } }),
      409,
      'conflict',
    );
    expect(taken.message).toBe('Crowd "buyers" already exists; choose another name, or delete that crowd first');
    expect(await ids('buyers')).toEqual([2, 5]);
  });

  it('refuses bad names, unknown steps and instances, and converted users of a workflow without a goal, saving nothing', async () => {
    const tenant = await createTenant(2);
    const base = `/tenants/${tenant.name}`;
    expect((await api('PUT', `${base}/crowds/trial`, { body: '1\n2', headers: { 'content-type': 'text/plain' } })).status).toBe(201);
    const instanceId = await startedInstance(base, { name: 'No goal', definition: { steps: definition.steps } }, 'trial');
    const save = (step: string, body: unknown, instance = instanceId) =>
      api('POST', `${base}/instances/${instance}/steps/${step}/crowd`, { token: tenant.key, body });

    const noGoal = expectError(await save('wait', { name: 'buyers', users: 'converted' }), 422, 'unprocessable');
    expect(noGoal.message).toContain('has no goal');
    expectError(await save('wait', { name: 'bad/name' }), 400, 'validation_failed');
    expectError(await save('wait', {}), 400, 'validation_failed');
    expectError(await save('wait', { name: 'ok', users: 'everyone' }), 400, 'validation_failed');
    expect(expectError(await save('nowhere', { name: 'ok' }), 404, 'not_found').message).toContain('Step "nowhere"');
    expectError(await save('wait', { name: 'ok' }, 'in_missing'), 404, 'not_found');
    const { crowds } = (await api('GET', `${base}/crowds`, { token: tenant.key })).body;
    expect(crowds.map((crowd: { name: string }) => crowd.name)).toEqual(['trial']);
  });
});
