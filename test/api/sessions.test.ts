import { spawn } from 'node:child_process';
import { describe, expect, inject, it } from 'vitest';
import { api, baseUrl, expectError, uniqueName } from '../helpers/api';
import { freePort, serverArguments, waitUntilUp } from '../helpers/next-server';

// Studio sessions are server-side rows: sign-out and a new admin token end them at once, on every server.

async function signIn(): Promise<string> {
  const response = await api('POST', '/session', { token: null, body: { token: inject('adminToken') } });
  expect(response.status).toBe(200);
  const setCookie = response.headers.get('set-cookie')!;
  expect(setCookie).toMatch(/HttpOnly/);
  expect(setCookie).toMatch(/SameSite=Strict/);
  return setCookie.split(';')[0];
}

const sameOrigin = () => ({ origin: baseUrl(), 'sec-fetch-site': 'same-origin' });

describe('studio sessions', () => {
  it('ends a session at sign-out: the old cookie is refused at once, another session keeps working', async () => {
    const first = await signIn();
    const second = await signIn();
    expect(first).not.toBe(second);
    expect((await api('GET', '/tenants', { token: null, headers: { cookie: first } })).status).toBe(200);
    expect((await api('DELETE', '/session', { token: null, headers: { cookie: first, ...sameOrigin() } })).status).toBe(200);
    const refused = expectError(await api('GET', '/tenants', { token: null, headers: { cookie: first } }), 401, 'unauthorized');
    expect(refused.message).toMatch(/session has ended/);
    expect((await api('GET', '/tenants', { token: null, headers: { cookie: second } })).status).toBe(200);
  });

  it('refuses unknown and malformed cookies with 401', async () => {
    expectError(await api('GET', '/tenants', { token: null, headers: { cookie: 'cf_session=forged' } }), 401, 'unauthorized');
    expectError(await api('GET', '/tenants', { token: null, headers: { cookie: 'cf_session=%E0%A4%A' } }), 401, 'unauthorized');
    expectError(await api('GET', '/tenants', { token: null, headers: { cookie: `cf_session=${'x'.repeat(5000)}` } }), 401, 'unauthorized');
  });

  it('ends every session when the server runs with a new admin token', async () => {
    const cookie = await signIn();
    // A second server on the same database, configured with a rotated token.
    const port = await freePort();
    let log = '';
    // The server entry (server/main.ts), as `npm start` runs it: boot builds and registers the app the routes read.
    const child = spawn(process.execPath, serverArguments(port), {
      env: {
        ...process.env,
        DATABASE_URL: inject('serverDatabaseUrl'),
        CROWDFLOW_ADMIN_TOKEN: `rotated-${uniqueName('token')}`,
        CROWDFLOW_ENGINE: 'off',
        NODE_ENV: 'production',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout?.on('data', (d) => (log += d));
    child.stderr?.on('data', (d) => (log += d));
    try {
      const rotated = `http://127.0.0.1:${port}`;
      await waitUntilUp(rotated, child, () => log, { timeoutMs: 60_000, pollMs: 200 });
      const response = await fetch(`${rotated}/api/v1/tenants`, { headers: { cookie } });
      expect(response.status).toBe(401);
      expect((await response.json()).error.message).toMatch(/admin token changed/);
      // The server that still has the token the session was made with accepts it.
      expect((await api('GET', '/tenants', { token: null, headers: { cookie } })).status).toBe(200);
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)));
    }
  });
});

describe('cross-site request forgery', () => {
  it('refuses cookie-authenticated changes from another origin or without an origin, and form-style bodies', async () => {
    const cookie = await signIn();
    const name = uniqueName('csrf');
    const body = JSON.stringify({ name });
    const attempt = (headers: Record<string, string>, payload: string | undefined = body) =>
      api('POST', '/tenants', { token: null, body: payload, headers: { cookie, ...headers } });
    expect(
      expectError(await attempt({ origin: 'http://127.0.0.1:8099', 'sec-fetch-site': 'same-site', 'content-type': 'application/json' }), 403, 'forbidden')
        .message,
    ).toMatch(/Cross-origin/);
    expect(expectError(await attempt({ origin: 'http://127.0.0.1:8099', 'content-type': 'application/json' }), 403, 'forbidden').message).toMatch(
      /127\.0\.0\.1:8099/,
    );
    expect(expectError(await attempt({ origin: 'null', 'content-type': 'application/json' }), 403, 'forbidden').message).toMatch(/Cross-origin/);
    expect(expectError(await attempt({ 'content-type': 'application/json' }), 403, 'forbidden').message).toMatch(/Origin/);
    expect(expectError(await attempt({ ...sameOrigin(), 'content-type': 'text/plain' }), 415, 'unsupported_media_type').message).toMatch(/application\/json/);
    expect(expectError(await attempt({ ...sameOrigin() }), 415, 'unsupported_media_type').message).toMatch(/application\/json/);
    expect((await api('GET', `/tenants/${name}`)).status).toBe(404);
    // The studio's own request goes through; a bodyless DELETE needs only the origin.
    expect((await attempt({ ...sameOrigin(), 'content-type': 'application/json' })).status).toBe(201);
    expectError(await api('DELETE', `/tenants/${name}`, { token: null, headers: { cookie, origin: 'http://127.0.0.1:8099' } }), 403, 'forbidden');
    expect((await api('DELETE', `/tenants/${name}`, { token: null, headers: { cookie, ...sameOrigin() } })).status).toBe(204);
  });

  it('leaves bearer-token requests alone', async () => {
    const name = uniqueName('bearer');
    const created = await api('POST', '/tenants', {
      body: JSON.stringify({ name }),
      headers: { origin: 'http://127.0.0.1:8099', 'sec-fetch-site': 'cross-site', 'content-type': 'application/json' },
    });
    expect(created.status).toBe(201);
  });
});
