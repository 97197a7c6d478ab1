import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, createTenant } from '../helpers/api';
import { startReceiver, type Receiver } from '../fixtures/webhooks/receiver';
import { eventually, launch, openPage, shot, signIn } from './browser';

// A marketer adds a webhook destination in the studio, a workflow whose entry step names it runs, and the delivery
// log shows what the (real, local) receiver acknowledged; a replay sends the same delivery again.

let browser: Browser;
let page: Page;
let receiver: Receiver;
let secret = '';

describe('webhooks in the studio', () => {
  beforeAll(async () => {
    receiver = await startReceiver({ secret: () => secret, now: () => Date.now(), seed: 3 });
    browser = await launch();
    page = await openPage(browser);
  });

  afterAll(async () => {
    await browser?.close();
    await receiver?.close();
  });

  it('adds a destination, runs a workflow into it and shows the delivery log with a replay', async () => {
    const tenant = await createTenant(1);
    // The receiver listens on 127.0.0.1: the admin allows this tenant private addresses.
    expect((await api('PUT', `/tenants/${tenant.name}/limits`, { body: { webhookPrivateAddresses: true } })).status).toBe(200);
    await signIn(page);
    await page.goto(`/t/${tenant.name}/webhooks`);
    await page.fill('[data-testid=webhook-name]', 'crm');
    await page.fill('[data-testid=webhook-url]', receiver.url);
    await page.fill('[data-testid=webhook-batch]', '2');
    await page.click('[data-testid=webhook-create]');
    secret = (await page.locator('[data-testid=webhook-secret]').textContent()) ?? '';
    expect(secret).toMatch(/^whsec_/);
    expect(await page.locator('[data-testid=webhook-secret-box]').textContent()).toContain('webhook:crm');
    await page.locator('[data-webhook=crm]').waitFor();

    const base = `/tenants/${tenant.name}`;
    expect((await api('PUT', `${base}/crowds/launch`, { body: '1\n2\n3', headers: { 'content-type': 'text/plain' } })).status).toBeLessThan(300);
    const definition = { steps: [{ name: 'welcome', kind: 'direct', enterAction: 'webhook:crm' }] };
    const workflow = await api('POST', `${base}/workflows`, { body: { name: 'hooked', definition } });
    expect((await api('POST', `${base}/workflows/${workflow.body.id}/start`, { body: { crowd: 'launch' } })).status).toBeLessThan(300);

    await page.click('[data-webhook=crm] [data-testid=webhook-open]');
    const rows = page.locator('[data-testid=delivery-row]');
    await eventually(() => rows.count(), 20_000).toBe(2);
    await eventually(() => page.locator('[data-testid=delivery-table]').textContent(), 20_000).not.toContain('pending');
    expect(await page.locator('[data-testid=delivery-table]').textContent()).toContain('delivered');
    expect(receiver.delivered.size).toBe(2);
    expect(receiver.received.every((r) => r.verified)).toBe(true);
    await shot(page, 'webhooks-01-log');

    await rows.first().locator('[data-testid=delivery-replay]').click();
    await eventually(() => receiver.received.length, 20_000).toBe(3);
    await eventually(() => rows.first().textContent(), 20_000).toContain('replay 1');
    await shot(page, 'webhooks-02-replayed');
  });
});
