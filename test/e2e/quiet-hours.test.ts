import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, createTenant } from '../helpers/api';
import { startReceiver, type Receiver } from '../fixtures/webhooks/receiver';
import { eventually, shot, useStudio } from './browser';

// Quiet hours (issue 37 §3) in the studio: a marketer types the tenant's window on the Webhooks page key by key (an end
// equal to the start is named before anything is sent), sets it, starts a journey inside the window, and the entry
// step says how many users wait for quiet hours to end; with nothing selected the side panel lets this journey keep
// hours of its own, checked as typed by validateWorkflow().

let page: Page;
let receiver: Receiver;
const studio = useStudio('quiet-hours');
const SECRET = 'whsec_test-secret-0123456789';
const hhmm = (ms: number) => new Date(ms).toISOString().slice(11, 16);

/** Selects the text of a box by clicking it and typing over it, key by key, keeping the focus there. */
async function typeInto(testId: string, text: string): Promise<void> {
  const box = page.getByTestId(testId);
  await box.click();
  await page.keyboard.press('Control+A');
  for (const key of text) {
    await page.keyboard.type(key);
    expect(await box.evaluate((element) => element === document.activeElement), `focus in ${testId} after ${key}`).toBe(true);
  }
}

describe('quiet hours in the studio', () => {
  beforeAll(async () => {
    receiver = await startReceiver({ secret: SECRET, now: () => Date.now(), seed: 11 });
  });
  afterAll(async () => {
    await receiver?.close();
  });

  it('sets the tenant’s window, shows users waiting on the step, and offers the journey hours of its own', async () => {
    const tenant = await createTenant(2);
    const base = `/tenants/${tenant.name}`;
    expect((await api('PUT', `${base}/limits`, { body: { webhookPrivateAddresses: true } })).status).toBe(200);
    expect((await api('POST', `${base}/webhooks`, { body: { name: 'crm', url: receiver.url, secret: SECRET } })).status).toBe(201);
    expect((await api('PUT', `${base}/crowds/launch`, { body: '1\n2\n3', headers: { 'content-type': 'text/plain' } })).status).toBe(201);

    page = await studio.open();
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.goto(`/t/${tenant.name}/webhooks`);
    await eventually(() => page.getByTestId('quiet-hours-status').textContent()).toContain('None: webhooks go at any hour');
    // A window around now in UTC (the users have no zone of their own; UTC is the default).
    const now = Date.now();
    const [start, end] = [hhmm(now - 3_600_000), hhmm(now + 7_200_000)];
    await typeInto('quiet-start', start);
    await typeInto('quiet-end', start);
    await eventually(() => page.getByTestId('quiet-problems').textContent()).toContain(`start and end are both ${start}`);
    expect(await page.getByTestId('quiet-save').isDisabled()).toBe(true);
    await typeInto('quiet-end', end);
    await eventually(() => page.getByTestId('quiet-problems').count()).toBe(0);
    await page.getByTestId('quiet-save').click();
    await eventually(() => page.getByTestId('quiet-hours-status').textContent()).toBe(
      `No webhooks ${start}–${end} in each user's zone (timezone, else UTC); deliveries due then are held until ${end} there.`,
    );
    expect((await api('GET', `${base}/quiet-hours`)).body).toMatchObject({ start, end, mode: 'hold' });
    await shot(page, 'quiet-hours-01-tenant-window');

    const definition = { steps: [{ name: 'welcome', kind: 'direct', enterAction: 'webhook:crm' }] };
    const created = await api('POST', `${base}/workflows`, { body: { name: 'Evening offer', definition } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect((await api('POST', `${base}/workflows/${created.body.id}/start`, { body: { crowd: 'launch' } })).status).toBeLessThan(300);
    await page.goto(`/t/${tenant.name}/workflows/${created.body.id}`);
    await eventually(() => page.locator('[data-step=welcome] [data-testid=step-quiet]').textContent(), 20_000).toBe('☾ 3 waiting for quiet hours');
    expect(receiver.delivered.size).toBe(0);

    // The journey's own hours, in the side panel with nothing selected.
    await page.locator('.react-flow__pane').click({ position: { x: 20, y: 20 } });
    const select = page.getByTestId('journey-quiet-select');
    expect(await select.inputValue()).toBe('tenant');
    await select.selectOption('own');
    await typeInto('journey-quiet-start', '22:00');
    await typeInto('journey-quiet-end', '22:00');
    await eventually(() => page.getByTestId('problems-bar').textContent()).toContain('quietHours.end: start and end are both 22:00');
    await typeInto('journey-quiet-end', '07:30');
    await eventually(() => page.getByTestId('problems-bar').count()).toBe(0);
    expect(await page.getByTestId('journey-quiet-help').textContent()).toContain('(timezone, else UTC)');
    await page.keyboard.press('Escape');
    await shot(page, 'quiet-hours-02-journey-own-hours');
    await page.click('[data-testid=save]');
    await eventually(() => page.locator('[data-testid=save-notice]').textContent()).toMatch(/^Saved version 2\.$/);
    expect((await api('GET', `${base}/workflows/${created.body.id}`)).body.definition.quietHours).toEqual({
      start: '22:00',
      end: '07:30',
      mode: 'hold',
      zoneAttribute: 'timezone',
      defaultZone: 'UTC',
    });
  });
});
