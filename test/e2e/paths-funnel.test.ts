import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { welcomeJourney, welcomeJourneyDraft } from '../../core/model/sample-workflows';
import { api, createTenant } from '../helpers/api';
import { eventually, useStudio } from './browser';

// Paths and funnel in the studio (issue 38 §4): from the running journey's toolbar, a Sankey of the moves between
// steps with every edge in a table, and a funnel of chosen steps as bars; the figures are those the moves made.

let page: Page;
const studio = useStudio('paths-funnel');
const CROWD = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
let tenant: { name: string; key: string };

const countOf = (step: string) => page.locator(`[data-step=${step}] [data-testid=step-count]`).getAttribute('data-count');
const cells = (row: string) => page.locator(row).locator('td').allTextContents();
const focused = () => page.evaluate(() => document.activeElement?.getAttribute('data-testid') ?? document.activeElement?.tagName);

describe('paths and funnel of a running journey', () => {
  beforeAll(async () => {
    tenant = await createTenant(2);
    const base = `/tenants/${tenant.name}`;
    expect((await api('PUT', `${base}/crowds/launch`, { body: CROWD.join('\n'), headers: { 'content-type': 'text/plain' } })).status).toBe(201);
    const created = await api('POST', `${base}/workflows`, { body: { name: 'Welcome journey', definition: welcomeJourney, draft: welcomeJourneyDraft } });
    expect(created.status).toBe(201);
    expect((await api('POST', `${base}/workflows/${created.body.id}/start`, { body: { crowd: 'launch' } })).status).toBeLessThan(300);
    page = await studio.open();
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.goto(`/t/${tenant.name}/workflows/${created.body.id}`);
  });

  it('draws the moves between steps as a Sankey, each edge with its moves and users in a table', async () => {
    await eventually(() => countOf('welcome'), 20_000).toBe(String(CROWD.length));
    // users 2, 3 and 7 buy (to "customer"), users 1 and 4 open the welcome mail (no plan: to "nurture")
    const events = [2, 3, 7].map((user) => ({ user, type: 'purchase' })).concat([1, 4].map((user) => ({ user, type: 'open' })));
    expect((await api('POST', '/events', { token: tenant.key, body: { events } })).status).toBe(202);
    await eventually(() => countOf('customer'), 20_000).toBe('3');
    await eventually(() => countOf('nurture')).toBe('2');
    await page.getByTestId('paths').click();
    const dialog = page.getByTestId('paths-dialog');
    await eventually(() => dialog.getByTestId('paths-table').locator('tbody tr').count(), 20_000).toBe(3);
    expect(await cells('[data-edge="(entered)->welcome"]')).toEqual(['(entered)', 'welcome', '10', '10']);
    expect(await cells('[data-edge="welcome->customer"]')).toEqual(['welcome', 'customer', '3', '3']);
    expect(await cells('[data-edge="welcome->nurture"]')).toEqual(['welcome', 'nurture', '2', '2']);
    // the Sankey: a node per step with users, each labelled with its name and figure
    const sankey = dialog.getByTestId('paths-sankey');
    await eventually(() => sankey.locator('.paths-node').count()).toBe(4);
    expect(await sankey.locator('.recharts-sankey-link').count()).toBe(3);
    expect(await sankey.locator('text').allTextContents()).toEqual(expect.arrayContaining(['(entered) · 10', 'welcome · 10', 'customer · 3', 'nurture · 2']));
    await studio.shot('01-paths');
    await page.keyboard.press('Escape');
    await eventually(() => dialog.count()).toBe(0);
    expect(await focused()).toBe('paths');
  });

  it('shows a funnel of the steps typed, in order, as bars with the conversion from each step', async () => {
    await page.keyboard.press('Tab');
    expect(await focused()).toBe('funnel');
    await page.keyboard.press('Enter');
    const dialog = page.getByTestId('funnel-dialog');
    // it opens on the journey's first way through: welcome, then its first branch's step
    const steps = dialog.getByTestId('funnel-steps');
    expect(await steps.inputValue()).toBe('welcome, customer');
    await eventually(() => cells('[data-testid=funnel-table] tbody tr:nth-child(2)'), 20_000).toEqual(['customer', '3', '30%', '30%']);
    expect(await cells('[data-testid=funnel-table] tbody tr:nth-child(1)')).toEqual(['welcome', '10', '–', '100%']);

    await steps.click();
    await page.keyboard.press('ControlOrMeta+a');
    await page.keyboard.type('welcome, nurture, done');
    expect(await focused()).toBe('funnel-steps');
    await page.keyboard.press('Enter');
    await eventually(() => dialog.locator('[data-testid=funnel-table] tbody tr').allTextContents()).toEqual(['welcome10–100%', 'nurture220%20%', 'done00%0%']);
    // a bar for each step with users (done's, of nobody, has no width), labelled with its users and share of the first
    expect(await dialog.getByTestId('funnel-bars').locator('.recharts-bar-rectangle path').count()).toBe(2);
    expect(await dialog.getByTestId('funnel-bars').locator('.recharts-label').allTextContents()).toEqual(expect.arrayContaining(['10 · 100%', '2 · 20%']));
    await studio.shot('02-funnel');

    // a step the journey lacks is said, not drawn as nobody
    await steps.click();
    await page.keyboard.press('ControlOrMeta+a');
    await page.keyboard.type('welcome, nowhere');
    await page.keyboard.press('Enter');
    await eventually(() => dialog.getByTestId('error').textContent()).toContain('Step "nowhere"');
    await page.keyboard.press('Escape');
    await eventually(() => dialog.count()).toBe(0);
    expect(await focused()).toBe('funnel');
  });
});
