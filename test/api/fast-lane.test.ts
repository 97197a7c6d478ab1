import { describe, expect, inject, it } from 'vitest';
import { api, baseUrl, createTenant, expectError } from '../helpers/api';

// Per-step counts are answered before Next.js routes the request (server/http/fast-lane.ts), by the same handler.
const FAST = 'x-crowdflow-fast-lane';

async function runningInstance() {
  const tenant = await createTenant(2);
  const base = `/tenants/${tenant.name}`;
  expect((await api('PUT', `${base}/crowds/c`, { body: '1\n2\n3', headers: { 'content-type': 'text/plain' } })).status).toBeLessThan(300);
  const definition = { steps: [{ name: 'entry', kind: 'branch', branches: [{ condition: 'event.type == "a"', next: 'done' }, { condition: 'event.type == "b"', next: 'done' }] }, { name: 'done', kind: 'direct' }] };
  const workflow = await api('POST', `${base}/workflows`, { body: { name: 'w', definition } });
  const started = await api('POST', `${base}/workflows/${workflow.body.id}/start`, { body: { crowd: 'c' } });
  await expect.poll(async () => (await api('GET', `${base}/instances/${started.body.instanceId}`)).body.state, { timeout: 20_000 }).toBe('running');
  return { tenant, base, instanceId: started.body.instanceId as string };
}

describe('fast lane for counts', () => {
  it('answers counts, and its errors, with the same shapes as the route', async () => {
    const { tenant, base, instanceId } = await runningInstance();
    const counts = await api('GET', `${base}/instances/${instanceId}/counts`, { token: tenant.key });
    expect(counts.status).toBe(200);
    expect(counts.headers.get(FAST)).toBe('1');
    expect(counts.body).toMatchObject({ instanceId, total: 3, steps: { entry: 3, done: 0 } });
    expect(counts.headers.get('content-type')).toMatch(/^application\/json/);

    const missing = await api('GET', `${base}/instances/no-such-instance/counts`);
    expect(missing.headers.get(FAST)).toBe('1');
    expectError(missing, 404, 'not_found');
    expectError(await api('GET', `${base}/instances/${instanceId}/counts`, { token: null }), 401, 'unauthorized');
    expectError(await api('GET', `/tenants/${encodeURIComponent(tenant.name)}/instances/${instanceId}%00/counts`), 400, 'bad_request');
    const other = await createTenant(1);
    expectError(await api('GET', `${base}/instances/${instanceId}/counts`, { token: other.key }), 404, 'not_found');
  });

  it('leaves everything that is not exactly the counts GET to Next.js', async () => {
    const { base, instanceId } = await runningInstance();
    // An API path is exact: a trailing slash is a 404 of its own, never a redirect to the counts.
    const slash = await fetch(`${baseUrl()}/api/v1${base}/instances/${instanceId}/counts/`, { redirect: 'manual', headers: { authorization: `Bearer ${inject('adminToken')}` } });
    expect(slash.status).toBe(404);
    expect(slash.headers.get('location')).toBeNull();
    expect(slash.headers.get(FAST)).toBeNull();
    const post = await api('POST', `${base}/instances/${instanceId}/counts`, { body: {} });
    expect(post.headers.get(FAST)).toBeNull();
    expect(post.status).toBe(405);
  });

  it('answers an API path with a malformed percent-escape with a 400, where Next.js would answer 500', async () => {
    const { base } = await runningInstance();
    for (const path of [`${base}/instances/%E0%A4%A/counts`, `${base}/workflows/%ZZ`, `/tenants/%`]) {
      expect(expectError(await api('GET', path), 400, 'bad_request').message, path).toMatch(/percent-escape/);
    }
    expect(expectError(await api('DELETE', `${base}/crowds/%E0%A4%A`), 400, 'bad_request').message).toMatch(/percent-escape/);
  });
});
