import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { api, createTenant } from '../helpers/api';
import { eventually, selectStep, useStudio } from './browser';

// Audience paths (issue 37 §1) on the canvas: a branch step says whether it routes users as they enter it (no
// condition reads the event) or waits for their events, and its counts show the routing at once after a start.

let page: Page;
const studio = useStudio('audience-paths');

const routing = (step: string) => page.locator(`[data-step=${step}] [data-testid=step-routing]`);
const countOf = (step: string) => page.locator(`[data-step=${step}] [data-testid=step-count]`).getAttribute('data-count');

describe('audience paths on the canvas', () => {
  beforeAll(async () => {
    const tenant = await createTenant(2);
    const base = `/tenants/${tenant.name}`;
    const profiles = [1, 2, 3, 4, 5, 6].map((user) => ({ user, attributes: { plan: user <= 2 ? 'pro' : 'free' } }));
    expect((await api('POST', `${base}/profiles`, { body: profiles })).status).toBeLessThan(300);
    expect((await api('PUT', `${base}/crowds/launch`, { body: '1\n2\n3\n4\n5\n6', headers: { 'content-type': 'text/plain' } })).status).toBe(201);
    const definition = {
      steps: [
        {
          name: 'plan',
          kind: 'branch',
          branches: [
            { condition: 'profile.plan == "pro"', next: 'pro' },
            { condition: 'true', next: 'wait' },
          ],
        },
        { name: 'pro', kind: 'direct' },
        { name: 'wait', kind: 'branch', branches: [{ condition: 'event.type == "open"', next: 'opened' }] },
        { name: 'opened', kind: 'direct' },
      ],
    };
    const created = await api('POST', `${base}/workflows`, { body: { name: 'Plans', definition } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect((await api('POST', `${base}/workflows/${created.body.id}/start`, { body: { crowd: 'launch' } })).status).toBeLessThan(300);
    page = await studio.open();
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.goto(`/t/${tenant.name}/workflows/${created.body.id}`);
  });

  it('says which branch steps route on entry and which wait for an event, and follows an edit of a condition', async () => {
    await eventually(() => countOf('pro'), 20_000).toBe('2');
    expect(await countOf('wait')).toBe('4');
    expect(await countOf('plan')).toBe('0');
    expect(await routing('plan').textContent()).toBe('↳ routes on entry');
    expect(await routing('wait').textContent()).toBe('◌ waits for an event');
    expect(await routing('plan').getAttribute('title')).toMatch(/as soon as they enter this step/);
    await studio.shot('01-routing-words');

    // the marketer turns the waiting step into a profile check: the step says it now decides on entry
    await selectStep(page, 'wait');
    await page.locator('[data-testid=branch-0]').getByRole('tab', { name: 'CEL' }).click();
    const cel = page.locator('[data-testid=branch-0] [data-testid=cel-input]');
    await cel.click();
    await page.keyboard.press('ControlOrMeta+a');
    await page.keyboard.type('profile.plan == "free"');
    expect(await cel.evaluate((element) => element === document.activeElement)).toBe(true);
    await eventually(() => routing('wait').textContent()).toBe('↳ routes on entry');
    await page.keyboard.press('Escape');
    await studio.shot('02-routing-after-edit');
  });
});
