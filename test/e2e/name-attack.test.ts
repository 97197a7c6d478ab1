import http from 'node:http';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { api, createTenant, expectError } from '../helpers/api';

// The attack of the security issue, replayed in a real browser: a crowd named `..` whose studio Delete
// (`DELETE …/crowds/..`, which Chromium normalises to `DELETE /api/v1/tenants/T/`) deleted the whole tenant.

let browser: Browser;
let page: Page;
let tenant: { name: string; id: string; key: string };

/** A request sent with its path exactly as written (what `curl --path-as-is` does): no client normalises it. */
function rawRequest(method: string, path: string): Promise<{ status: number; location?: string }> {
  const url = new URL(inject('baseUrl'));
  return new Promise((resolve, reject) => {
    const request = http.request(
      { host: url.hostname, port: url.port, method, path, headers: { authorization: `Bearer ${inject('adminToken')}` } },
      (response) => {
        response.resume();
        response.on('end', () => resolve({ status: response.statusCode ?? 0, location: response.headers.location }));
      },
    );
    request.on('error', reject);
    request.end();
  });
}

async function expectTenantIntact() {
  expect((await api('GET', `/tenants/${tenant.name}`)).status).toBe(200);
  const crowd = await api('GET', `/tenants/${tenant.name}/crowds/base`);
  expect(crowd.status).toBe(200);
  expect(crowd.body.count).toBe(3);
}

describe('a crowd name cannot reach its tenant', () => {
  beforeAll(async () => {
    tenant = await createTenant(2);
    const upload = await api('PUT', `/tenants/${tenant.name}/crowds/base`, { token: tenant.key, body: '1\n2\n3\n', headers: { 'content-type': 'text/plain' } });
    expect(upload.status).toBe(201);
    browser = await chromium.launch({
      executablePath: '/usr/bin/chromium',
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
      ],
    });
    const context = await browser.newContext({ baseURL: inject('baseUrl') });
    page = await context.newPage();
    const signIn = await page.request.post('/api/v1/session', { data: { token: inject('adminToken') } });
    expect(signIn.status()).toBe(200);
    await page.goto('/');
  });

  afterAll(async () => {
    await browser?.close();
  });

  it('refuses to create a crowd named "..", "." or with a slash, on every route that names one', async () => {
    for (const name of ['..', '.', '.hidden', 'a/b', 'tab\there']) {
      const combined = await api('POST', `/tenants/${tenant.name}/combine-crowds`, { token: tenant.key, body: { name, op: 'union', crowds: ['base'] } });
      expect(expectError(combined, 400, 'validation_failed').message).toContain('Crowd name');
    }
    const uploaded = await rawRequest('PUT', `/api/v1/tenants/${tenant.name}/crowds/%2e%2e`);
    expect(uploaded.status).toBeGreaterThanOrEqual(400);
    expect(uploaded.status).toBeLessThan(500);
  });

  it('keeps the tenant when the signed-in studio sends the DELETE a ".." crowd would produce', async () => {
    const statuses = await page.evaluate(async (name) => {
      const results: Array<{ status: number; redirected: boolean; url: string }> = [];
      for (const path of [`/api/v1/tenants/${name}/crowds/..`, `/api/v1/tenants/${name}/crowds/%2e%2e`, `/api/v1/tenants/${name}/`]) {
        const response = await fetch(path, { method: 'DELETE', credentials: 'same-origin', redirect: 'manual' });
        results.push({ status: response.status, redirected: response.type === 'opaqueredirect', url: response.url });
      }
      return results;
    }, tenant.name);
    for (const result of statuses) {
      expect(result.redirected, JSON.stringify(result)).toBe(false);
      expect(result.status, JSON.stringify(result)).toBe(404);
    }
    await expectTenantIntact();
  });

  it('never redirects an API path, whatever its dots and slashes (curl --path-as-is)', async () => {
    for (const path of [`/api/v1/tenants/${tenant.name}/crowds/%2e%2e`, `/api/v1/tenants/${tenant.name}/crowds/..`, `/api/v1/tenants/${tenant.name}/`]) {
      const answer = await rawRequest('DELETE', path);
      expect(answer.location, path).toBeUndefined();
      expect(answer.status, path).toBe(404);
    }
    await expectTenantIntact();
  });
});
