import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, createTenant } from '../helpers/api';
import { startReceiver, type Receiver } from '../fixtures/webhooks/receiver';
import { crmJourney } from '../fixtures/webhooks/journey';
import { eventually, shot, useStudio } from './browser';

// Frequency caps (issue 37 §2) on the canvas: under a cap of one delivery a day, a user who got the entry step's
// webhook and then moves into a second webhook step moves on as usual, and that step says "1 capped here" while the
// journey is open (the counts stream carries the skips the webhook pump records).

let page: Page;
let receiver: Receiver;
const studio = useStudio('frequency-caps');
const SECRET = 'whsec_test-secret-0123456789';

describe('frequency caps on the canvas', () => {
  beforeAll(async () => {
    receiver = await startReceiver({ secret: SECRET, now: () => Date.now(), seed: 5 });
  });
  afterAll(async () => {
    await receiver?.close();
  });

  it('shows the users a cap kept from a step’s webhook, live, beside the step’s count', async () => {
    const tenant = await createTenant(1);
    const base = `/tenants/${tenant.name}`;
    expect((await api('PUT', `${base}/limits`, { body: { webhookPrivateAddresses: true } })).status).toBe(200);
    expect((await api('POST', `${base}/webhooks`, { body: { name: 'crm', url: receiver.url, secret: SECRET } })).status).toBe(201);
    expect((await api('POST', `${base}/frequency-caps`, { body: { name: 'one-a-day', maxDeliveries: 1, window: '1d' } })).status).toBe(201);
    expect((await api('PUT', `${base}/crowds/launch`, { body: '1\n2\n3', headers: { 'content-type': 'text/plain' } })).status).toBe(201);
    const definition = crmJourney();
    const created = await api('POST', `${base}/workflows`, { body: { name: 'Capped', definition } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect((await api('POST', `${base}/workflows/${created.body.id}/start`, { body: { crowd: 'launch' } })).status).toBeLessThan(300);
    await eventually(() => receiver.delivered.size, 20_000).toBeGreaterThan(0);

    page = await studio.open();
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.goto(`/t/${tenant.name}/workflows/${created.body.id}`);
    const capped = page.locator('[data-step=bought] [data-testid=step-capped]');
    await page.locator('[data-step=bought] [data-testid=step-count]').waitFor();
    expect(await capped.count()).toBe(0);

    // User 2 buys: the move happens, the second message to them today is skipped.
    expect((await api('POST', '/events', { token: tenant.key, body: { tenant: tenant.name, events: [{ user: 2, type: 'buy' }] } })).status).toBe(202);
    await eventually(() => page.locator('[data-step=bought] [data-testid=step-count]').getAttribute('data-count'), 20_000).toBe('1');
    await eventually(() => capped.textContent(), 20_000).toBe('⊘ 1 capped here');
    expect(await page.locator('[data-step=welcome] [data-testid=step-capped]').count()).toBe(0);
    await shot(page, 'frequency-caps-01-capped-here');
  });
});
