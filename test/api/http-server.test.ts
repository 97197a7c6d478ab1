import { request } from 'node:http';
import { describe, expect, inject, it } from 'vitest';
import { api, baseUrl, createTenant, expectError } from '../helpers/api';

// Our own HTTP server (server/main.ts, server/http/http-server.ts) answers per-step counts and event batches without
// Next.js, by the same handler as the route file, and refuses API paths that Next.js would redirect to a normalized path.
const FAST = 'x-crowdflow-fast-lane';

/** A request with the path exactly as given: fetch() would resolve `.` and `..` segments (also `%2e`) itself. */
function rawRequest(method: string, path: string): Promise<{ status: number; headers: Record<string, unknown>; body: any }> {
  return new Promise((resolve, reject) => {
    const url = new URL(baseUrl());
    const sent = request({ host: url.hostname, port: url.port, method, path, headers: { authorization: `Bearer ${inject('adminToken')}` } }, (response) => {
      let text = '';
      response.on('data', (chunk) => (text += chunk));
      response.on('end', () => resolve({ status: response.statusCode!, headers: response.headers, body: text ? JSON.parse(text) : undefined }));
    });
    sent.on('error', reject);
    sent.end();
  });
}

async function runningInstance() {
  const tenant = await createTenant(2);
  const base = `/tenants/${tenant.name}`;
  expect((await api('PUT', `${base}/crowds/c`, { body: '1\n2\n3', headers: { 'content-type': 'text/plain' } })).status).toBeLessThan(300);
  const branches = [
    { condition: 'event.type == "a"', next: 'done' },
    { condition: 'event.type == "b"', next: 'done' },
  ];
  const definition = {
    steps: [
      { name: 'entry', kind: 'branch', branches },
      { name: 'done', kind: 'direct' },
    ],
  };
  const workflow = await api('POST', `${base}/workflows`, { body: { name: 'w', definition } });
  const started = await api('POST', `${base}/workflows/${workflow.body.id}/start`, { body: { crowd: 'c' } });
  await expect.poll(async () => (await api('GET', `${base}/instances/${started.body.instanceId}`)).body.state, { timeout: 20_000 }).toBe('running');
  return { tenant, base, instanceId: started.body.instanceId as string };
}

describe('the server entry', () => {
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

  it('takes crowd uploads itself: the body streams to the same handler as the route file, with its answers and errors', async () => {
    const tenant = await createTenant(1);
    const path = `/tenants/${tenant.name}/crowds/streamed`;
    const text = { 'content-type': 'text/plain' };
    const created = await api('PUT', path, { body: '1\n2\n3\n', headers: text });
    expect(created.headers.get(FAST)).toBe('1');
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: 'streamed', count: 3 });
    const replaced = await api('PUT', path, { body: Array.from({ length: 50_000 }, (_, i) => i).join('\n'), headers: text, token: tenant.key });
    expect([replaced.status, replaced.body.count, replaced.headers.get(FAST)]).toEqual([200, 50_000, '1']);
    const bad = await api('PUT', path, { body: '1\n2x\n', headers: text });
    expect(bad.headers.get(FAST)).toBe('1');
    expectError(bad, 400, 'invalid_id');
    expect((await api('GET', path)).body.count).toBe(50_000);
    const taken = await api('POST', path, { body: '7', headers: text });
    expect(taken.headers.get(FAST)).toBe('1');
    expectError(taken, 409, 'conflict');
    expectError(await api('PUT', path, { body: '1', headers: text, token: null }), 401, 'unauthorized');
  });

  it('takes event batches itself, with the same answers and errors as the route: accepted, replayed under a key, refused', async () => {
    const { tenant, base, instanceId } = await runningInstance();
    const events = [{ user: 1, type: 'a' }];
    const sent = await api('POST', '/events', { token: tenant.key, body: { events } });
    expect([sent.status, sent.body, sent.headers.get(FAST)]).toEqual([202, { accepted: 1 }, '1']);
    await expect
      .poll(async () => (await api('GET', `${base}/instances/${instanceId}/counts`, { token: tenant.key })).body.steps, { timeout: 20_000 })
      .toMatchObject({ entry: 2, done: 1 });

    const keyed = { token: tenant.key, body: { events: [{ user: 2, type: 'b' }] }, headers: { 'idempotency-key': 'batch-1' } };
    expect((await api('POST', '/events', keyed)).status).toBe(202);
    const again = await api('POST', '/events', keyed);
    expect([again.status, again.body, again.headers.get('idempotent-replayed'), again.headers.get(FAST)]).toEqual([202, { accepted: 1 }, 'true', '1']);

    const invalid = await api('POST', '/events', { token: tenant.key, body: { events: [{ user: -1, type: 'a' }] } });
    expect(invalid.headers.get(FAST)).toBe('1');
    expect(invalid.status).toBe(400);
    expectError(await api('POST', '/events', { token: tenant.key, body: 'user=1', headers: { 'content-type': 'text/plain' } }), 415, 'unsupported_media_type');
    expectError(await api('POST', '/events', { token: null, body: { events } }), 401, 'unauthorized');
    const reader = await createTenant(1, ['read']);
    expectError(await api('POST', '/events', { token: reader.key, body: { events } }), 403, 'forbidden');
  });

  it('leaves everything that is not exactly the counts GET to Next.js', async () => {
    const { base, instanceId } = await runningInstance();
    // An API path is exact: a trailing slash is a 404 of its own, never a redirect to the counts.
    const slash = await fetch(`${baseUrl()}/api/v1${base}/instances/${instanceId}/counts/`, {
      redirect: 'manual',
      headers: { authorization: `Bearer ${inject('adminToken')}` },
    });
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

  it('answers 404 and never redirects an API path with a trailing slash, an empty, "." or ".." segment (also as %2e)', async () => {
    const { tenant, base, instanceId } = await runningInstance();
    expect((await api('PUT', `${base}/crowds/kept`, { body: '7', headers: { 'content-type': 'text/plain' } })).status).toBeLessThan(300);
    const paths = [
      `/api/v1${base}/crowds/..`,
      `/api/v1${base}/crowds/%2e%2e`,
      `/api/v1${base}/crowds/.%2E`,
      `/api/v1${base}/crowds/.`,
      `/api/v1${base}/crowds/%2e`,
      `/api/v1${base}/crowds/kept/`,
      `/api/v1${base}//crowds/kept`,
      `/api/v1${base}/crowds/kept/../kept`,
      `/api/v1${base}/instances/${instanceId}/./counts`,
      `/api/v1${base}/`,
      `/api/v1/`,
      `//api/v1${base}`,
      `/api\\v1${base}`,
    ];
    for (const path of paths) {
      for (const method of ['GET', 'DELETE']) {
        const answer = await rawRequest(method, path);
        expect(answer.status, `${method} ${path}`).toBe(404);
        expect(answer.headers.location, `${method} ${path}`).toBeUndefined();
        expect(answer.body.error.code, `${method} ${path}`).toBe('not_found');
        expect(answer.body.error.message, `${method} ${path}`).toMatch(/trailing slash|segment/);
      }
    }
    // Nothing was deleted through a normalized path: the tenant and its crowd are still there.
    expect((await api('GET', `/tenants/${tenant.name}`)).status).toBe(200);
    expect((await api('GET', `${base}/crowds/kept`)).status).toBe(200);
  });
});
