import { mkdirSync } from 'node:fs';
import http from 'node:http';
import { chromium, type Browser, type BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { api, createTenant, uniqueName } from '../helpers/api';
import { freePort } from '../helpers/next-server';

// A page on another origin of the same site (another port of 127.0.0.1) tries to use the signed-in admin's studio
// cookie. The cookie is sent (same site), so only the server's origin and content-type checks stand in the way.

let browser: Browser;
let context: BrowserContext;
let attacker: http.Server;
let attackerOrigin: string;

beforeAll(async () => {
  const port = await freePort();
  attacker = http.createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'text/html' });
    response.end('<!doctype html><title>elsewhere</title><p>another origin</p>');
  });
  await new Promise<void>((resolve) => attacker.listen(port, '127.0.0.1', resolve));
  attackerOrigin = `http://127.0.0.1:${port}`;
  browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
  context = await browser.newContext();
  const signIn = await context.request.post(`${inject('baseUrl')}/api/v1/session`, { data: { token: inject('adminToken') } });
  expect(signIn.status()).toBe(200);
});

afterAll(async () => {
  await browser?.close();
  await new Promise((resolve) => attacker?.close(resolve));
});

describe('cross-site request forgery in Chromium', () => {
  it("refuses a tenant created through the admin's cookie from another origin; the studio's own origin may", async () => {
    const studio = inject('baseUrl');
    const page = await context.newPage();
    await page.goto(attackerOrigin);
    const name = uniqueName('csrf');
    const noCors = await page.evaluate(
      async ({ url, body }) => {
        await fetch(url, { method: 'POST', mode: 'no-cors', credentials: 'include', body: new Blob([body]) });
        await fetch(url, { method: 'POST', mode: 'no-cors', credentials: 'include', headers: { 'content-type': 'text/plain' }, body });
        try {
          await fetch(url, { method: 'POST', mode: 'cors', credentials: 'include', headers: { 'content-type': 'application/json' }, body });
          return 'sent';
        } catch {
          return 'blocked by CORS';
        }
      },
      { url: `${studio}/api/v1/tenants`, body: JSON.stringify({ name }) },
    );
    expect(noCors).toBe('blocked by CORS');
    expect((await api('GET', `/tenants/${name}`)).status).toBe(404);

    // A tenant's deletion from the other origin does not happen either (DELETE needs CORS; the preflight is not granted).
    const victim = await createTenant(1);
    await page.evaluate(async (url) => {
      try {
        await fetch(url, { method: 'DELETE', mode: 'cors', credentials: 'include' });
      } catch {
        // blocked
      }
    }, `${studio}/api/v1/tenants/${victim.name}`);
    expect((await api('GET', `/tenants/${victim.name}`)).status).toBe(200);

    // The same calls from a page of the studio's origin go through.
    await page.goto(`${studio}/api/v1/openapi.json`);
    const own = await page.evaluate(
      async ({ url, body }) => (await fetch(url, { method: 'POST', credentials: 'same-origin', headers: { 'content-type': 'application/json' }, body })).status,
      { url: `${studio}/api/v1/tenants`, body: JSON.stringify({ name }) },
    );
    expect(own).toBe(201);
    await page.close();
  });
});

describe('API keys page', () => {
  it('creates a key with scopes and shows its secret once, shows its last use, and revokes it', async () => {
    const tenant = await createTenant(1);
    const page = await context.newPage();
    await page.goto(`${inject('baseUrl')}/t/${tenant.name}/keys`);
    await page.getByRole('link', { name: 'API keys' }).waitFor();
    await page.locator('[data-testid=key-name]').fill('crm sync');
    await page.locator('[data-testid=key-scope-read]').check();
    await page.locator('[data-testid=key-create]').click();
    const secret = await page.locator('[data-testid=key-secret]').innerText();
    expect(secret).toMatch(/^cfk_/);
    const row = page.locator('[data-testid=key-row][data-key="crm sync"]');
    await expect.poll(() => row.locator('td').nth(2).innerText()).toBe('ingest, read');
    expect(await row.locator('[data-testid=key-last-used]').innerText()).toBe('—');
    mkdirSync('test-results', { recursive: true });
    await page.screenshot({ path: 'test-results/studio-keys.png' });

    expect((await api('GET', `/tenants/${tenant.name}/crowds`, { token: secret })).status).toBe(200);
    expect((await api('PUT', `/tenants/${tenant.name}/crowds/c`, { token: secret, body: '1\n', headers: { 'content-type': 'text/csv' } })).status).toBe(403);
    await expect
      .poll(
        async () => {
          await page.reload();
          return row.locator('[data-testid=key-last-used]').innerText();
        },
        { timeout: 10_000 },
      )
      .not.toBe('—');
    // After a reload the secret is gone from the page: it was shown once.
    expect(await page.locator('[data-testid=key-secret]').count()).toBe(0);

    page.once('dialog', (dialog) => void dialog.accept());
    await row.locator('[data-testid=key-revoke]').click();
    await expect.poll(() => row.locator('[data-testid=key-status]').innerText()).toMatch(/^revoked/);
    expect((await api('GET', `/tenants/${tenant.name}/crowds`, { token: secret })).status).toBe(401);
    await page.close();
  });
});

describe('security headers of studio pages', () => {
  it('sends a nonce-based CSP, frame-ancestors none and a Referrer-Policy, and the studio runs with no CSP violation', async () => {
    const tenant = await createTenant(1);
    const definition = {
      steps: [
        {
          name: 'entry',
          kind: 'branch',
          branches: [
            { condition: 'event.type == "buy"', next: 'done' },
            { condition: 'true', next: 'done' },
          ],
        },
        { name: 'done', kind: 'direct' },
      ],
    };
    const workflow = await api('POST', `/tenants/${tenant.name}/workflows`, { body: { name: 'csp', definition } });
    const page = await context.newPage();
    await page.addInitScript(() => {
      const seen: string[] = [];
      (window as unknown as { cspViolations: string[] }).cspViolations = seen;
      document.addEventListener('securitypolicyviolation', (event) => seen.push(`${event.violatedDirective} ${event.blockedURI}`));
    });
    const studio = inject('baseUrl');
    const response = await page.goto(`${studio}/t/${tenant.name}/workflows/${workflow.body.id}`);
    const headers = response!.headers();
    expect(headers['content-security-policy']).toMatch(/script-src 'self' 'nonce-[A-Za-z0-9+/=]+' 'strict-dynamic'/);
    expect(headers['content-security-policy']).toMatch(/frame-ancestors 'none'/);
    expect(headers['content-security-policy']).toMatch(/object-src 'none'/);
    expect(headers['referrer-policy']).toBe('same-origin');
    expect(headers['x-frame-options']).toBe('DENY');
    // The canvas rendered (React ran under the policy) and nothing was blocked.
    await page.locator('[data-step="entry"]').waitFor();
    for (const path of ['/', `/t/${tenant.name}`, `/t/${tenant.name}/crowds`, `/t/${tenant.name}/keys`]) {
      await page.goto(`${studio}${path}`);
      await page.locator('h1').first().waitFor();
    }
    expect(await page.evaluate(() => (window as unknown as { cspViolations: string[] }).cspViolations)).toEqual([]);
    // Markup injected the way an XSS would (an inline event handler) is blocked and reported.
    await page.evaluate(() => {
      const holder = document.createElement('div');
      holder.innerHTML = '<img src="/no-such-image.png" onerror="window.injectedRan = true">';
      document.body.append(holder);
    });
    await expect.poll(() => page.evaluate(() => (window as unknown as { cspViolations: string[] }).cspViolations.join())).toMatch(/script-src/);
    expect(await page.evaluate(() => (window as unknown as { injectedRan?: boolean }).injectedRan ?? false)).toBe(false);
    // The nonce differs per page.
    const again = await page.goto(`${studio}/signin`);
    expect(again!.headers()['content-security-policy']).not.toBe(headers['content-security-policy']);
    await page.close();
  });
});

// Last in this file: it signs this context's browser out. (The e2e files run one at a time, so no other test's
// session is ended by it; API test files run in parallel against one server and could not test it safely.)
describe('signing every browser out', () => {
  it('ends the signed-in studio session at once when the admin calls DELETE /sessions', async () => {
    const tenant = await createTenant(1);
    const page = await context.newPage();
    await page.goto(`${inject('baseUrl')}/t/${tenant.name}/keys`);
    await page.locator('[data-testid=key-table]').waitFor();
    const ended = await api('DELETE', '/sessions');
    expect(ended.status).toBe(200);
    expect(ended.body.ended).toBeGreaterThanOrEqual(1);
    await page.reload();
    await page.waitForURL(/\/signin/);
    const audit = await api('GET', '/audit?action=session.end_all');
    expect(audit.body.events.at(-1)).toMatchObject({ actor: 'admin:token', details: { ended: ended.body.ended } });
    await page.close();
  });
});
