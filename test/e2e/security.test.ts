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
