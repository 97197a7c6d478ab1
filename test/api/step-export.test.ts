import { describe, expect, it } from 'vitest';
import { api, createTenant, expectError } from '../helpers/api';

// A step's export is named for the journey, the step and the day (issue 32 §3), not the instance id.
const definition = {
  steps: [
    { name: 'wait', kind: 'branch', branches: [{ condition: 'event.type == "purchase"', next: 'Bought_it' }] },
    { name: 'Bought_it', kind: 'direct' },
  ],
  goal: { condition: 'event.type == "purchase"' },
};

describe('step export file names', () => {
  it('names the file journey-step-date, with -converted for the goal users and the format’s extension', async () => {
    const tenant = await createTenant(2);
    const base = `/tenants/${tenant.name}`;
    expect((await api('PUT', `${base}/crowds/c`, { body: '1\n2', headers: { 'content-type': 'text/plain' } })).status).toBe(201);
    const created = await api('POST', `${base}/workflows`, { body: { name: 'Spring Sale: Élan', definition } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const instanceId: string = (await api('POST', `${base}/workflows/${created.body.id}/start`, { body: { crowd: 'c' } })).body.instanceId;
    await expect.poll(async () => (await api('GET', `${base}/instances/${instanceId}`)).body.state, { timeout: 20_000 }).toBe('running');
    const day = new Date().toISOString().slice(0, 10);
    const disposition = async (query: string, step = 'wait') => {
      const exported = await api('GET', `${base}/instances/${instanceId}/steps/${encodeURIComponent(step)}/export?${query}`, { token: tenant.key });
      expect(exported.status).toBe(200);
      return exported.headers.get('content-disposition');
    };
    expect(await disposition('format=csv')).toBe(`attachment; filename="spring-sale-elan-wait-${day}.csv"`);
    expect(await disposition('format=roaring', 'Bought_it')).toBe(`attachment; filename="spring-sale-elan-bought-it-${day}.roaring"`);
    expect(await disposition('format=json&users=converted')).toBe(`attachment; filename="spring-sale-elan-wait-converted-${day}.json"`);
    expectError(await api('GET', `${base}/instances/${instanceId}/steps/nowhere/export`), 404, 'not_found');
  });
});
