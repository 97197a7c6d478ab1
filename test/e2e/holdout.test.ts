import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, createTenant } from '../helpers/api';
import { startReceiver, type Receiver } from '../fixtures/webhooks/receiver';
import { eventually, shot, useStudio } from './browser';

// Holdout groups (issue 37 §4) in the studio: with nothing selected, a marketer types the share to hold out into the
// side panel key by key (the focus stays in the box; a share over 50% is named in the problems bar), saves, starts
// the journey, and sees each group's conversion and the lift with its 95% interval in the panel and on the goal strip, with a verdict only once each group has enough
// conversions for the test to hold.

let page: Page;
let receiver: Receiver;
const studio = useStudio('holdout');
const SECRET = 'whsec_test-secret-0123456789';

describe('holdout on the canvas', () => {
  beforeAll(async () => {
    receiver = await startReceiver({ secret: SECRET, now: () => Date.now(), seed: 7 });
  });
  afterAll(async () => {
    await receiver?.close();
  });

  it('is typed in the side panel, then shows both groups’ conversion and the lift', async () => {
    const tenant = await createTenant(2);
    const base = `/tenants/${tenant.name}`;
    expect((await api('PUT', `${base}/limits`, { body: { webhookPrivateAddresses: true } })).status).toBe(200);
    expect((await api('POST', `${base}/webhooks`, { body: { name: 'crm', url: receiver.url, secret: SECRET } })).status).toBe(201);
    const users = Array.from({ length: 1000 }, (_, i) => i + 1);
    expect((await api('PUT', `${base}/crowds/launch`, { body: users.join('\n'), headers: { 'content-type': 'text/plain' } })).status).toBe(201);
    const definition = {
      steps: [
        { name: 'welcome', kind: 'direct', enterAction: 'webhook:crm', next: 'wait' },
        { name: 'wait', kind: 'branch', branches: [{ condition: 'event.type == "buy"', next: 'bought' }] },
        { name: 'bought', kind: 'direct' },
      ],
      goal: { condition: 'event.type == "buy"' },
    };
    const created = await api('POST', `${base}/workflows`, { body: { name: 'Spring sale', definition } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);

    page = await studio.open();
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.goto(`/t/${tenant.name}/workflows/${created.body.id}`);
    await page.locator('.react-flow__pane').click({ position: { x: 20, y: 20 } });
    const box = page.getByTestId('holdout-percent-input');
    const focused = () => box.evaluate((element) => element === document.activeElement);
    await box.click();
    for (const key of '100') {
      await page.keyboard.type(key);
      expect(await focused(), `focus after typing ${key}`).toBe(true);
    }
    expect(await box.inputValue()).toBe('100');
    await eventually(() => page.getByTestId('problems-bar').textContent()).toContain('holdout.percent 100 is over 50');
    await page.keyboard.press('Backspace');
    expect(await focused()).toBe(true);
    expect(await box.inputValue()).toBe('10');
    await eventually(() => page.getByTestId('holdout-help').textContent()).toBe(
      '10% of entering users go through the journey without its webhooks, as a control group. The goal is counted for both groups.',
    );
    await eventually(() => page.getByTestId('problems-bar').count()).toBe(0);
    await page.click('[data-testid=save]');
    await eventually(() => page.locator('[data-testid=save-notice]').textContent()).toMatch(/^Saved version 2\.$/);
    expect((await api('GET', `${base}/workflows/${created.body.id}`)).body.definition.holdout).toEqual({ percent: 10 });

    const started = await api('POST', `${base}/workflows/${created.body.id}/start`, { body: { crowd: 'launch' } });
    expect(started.status, JSON.stringify(started.body)).toBeLessThan(300);
    const { instanceId } = started.body;
    const group = async (name: string) => {
      await eventually(
        async () => (await api('GET', `${base}/instances/${instanceId}/steps/wait/export?group=${name}`, { token: tenant.key })).status,
        20_000,
      ).toBe(200);
      const text = (await api('GET', `${base}/instances/${instanceId}/steps/wait/export?group=${name}`, { token: tenant.key })).body;
      return String(text).split('\n').filter(Boolean).map(Number);
    };
    const [held, treated] = [await group('holdout'), await group('treatment')];
    // 30 of the treated buy (about 3.3%), 1 of the held out (about 1%).
    const buyers = [...treated.slice(0, 30), held[0]];
    expect(
      (await api('POST', '/events', { token: tenant.key, body: { tenant: tenant.name, events: buyers.map((user) => ({ user, type: 'buy' })) } })).status,
    ).toBe(202);

    await page.locator('.react-flow__pane').click({ position: { x: 20, y: 20 } });
    const rows = page.getByTestId('holdout-group');
    await eventually(() => rows.allTextContents(), 20_000).toEqual([
      `Treated${treated.length.toLocaleString('en-US')}30 · ${Math.round((30 / treated.length) * 1000) / 10}%`,
      `Held out${held.length}1 · ${Math.round((1 / held.length) * 1000) / 10}%`,
    ]);
    // The groups depend on the workflow's id (the salt): an interval's end may round to ±0 pts.
    const words = await page.getByTestId('holdout-lift-words').textContent();
    expect(words).toMatch(/^Lift \+\d+(\.\d)? pts \(\+\d+%\) over the holdout · 95% confidence: [−+±]\d+(\.\d)? pts to [+±]\d+(\.\d)? pts/);
    // One held-out conversion: the figures, but no verdict yet.
    expect(await page.getByTestId('holdout-verdict').textContent()).toBe('Too few conversions to judge yet: each group needs 5 (the holdout has 1).');
    expect(await page.getByTestId('lift-strip').textContent()).toMatch(/· Lift \+\d+(\.\d)? pts \(\+\d+%\) over the holdout \(too early to judge\)$/);
    await shot(page, 'holdout-01-lift-strip');

    // 270 more treated buyers and 5 more held-out ones: enough conversions for a verdict, and a clear one.
    const more = [...treated.slice(30, 300), ...held.slice(1, 6)];
    expect(
      (await api('POST', '/events', { token: tenant.key, body: { tenant: tenant.name, events: more.map((user) => ({ user, type: 'buy' })) } })).status,
    ).toBe(202);
    await eventually(() => page.getByTestId('holdout-verdict').textContent(), 20_000).toBe('Significant at 95% (p < 0.001).');
    expect(await page.getByTestId('lift-strip').textContent()).toMatch(/over the holdout \(significant\)$/);
    await page.getByTestId('holdout-lift').scrollIntoViewIfNeeded();
    await shot(page, 'holdout-02-lift-panel');
  });
});
