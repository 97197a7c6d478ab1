import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { welcomeJourney, welcomeJourneyDraft } from '../../core/model/sample-workflows';
import { api, createTenant, uniqueName } from '../helpers/api';
import { waitFor } from '../helpers/wait-for';
import { eventually, useStudio } from './browser';

// Pages a marketer can use (issue 32 §3), walked as a marketer does on the running Welcome journey with a purchase
// goal: exports named for the journey, step and day; each page looked at in light and dark mode at 1440 and 1024 px.

let page: Page;
let tenant: { name: string; key: string };
let workflowId: string;
let trickle: ChildProcess | undefined;
const studio = useStudio('pages');
const CROWD = [1, 2, 3, 4, 5, 6];
const today = () => new Date().toISOString().slice(0, 10);

const countOf = (step: string) => page.locator(`[data-step=${step}] [data-testid=step-count]`).getAttribute('data-count');
const focusedLabel = () => page.evaluate(() => document.activeElement?.getAttribute('aria-label') ?? document.activeElement?.textContent);

/**
 * Screenshots `name` in light and dark mode at 1440 and 1024 px wide (on the canvas with no dialog open, fitted to the
 * window as the marketer would with the fit button), then puts the page back as it was.
 */
async function shotEveryWay(name: string, height = 900) {
  const fitView = page.locator('.react-flow__controls-fitview');
  for (const width of [1440, 1024]) {
    for (const colorScheme of ['light', 'dark'] as const) {
      await page.setViewportSize({ width, height });
      await page.emulateMedia({ colorScheme });
      if ((await fitView.isVisible()) && (await page.locator('dialog[open]').count()) === 0) await fitView.click();
      await page.evaluate(() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done))));
      await studio.shot(`${name}-${width}-${colorScheme}`);
    }
  }
  await page.setViewportSize({ width: 1440, height: 900 });
  await page.emulateMedia({ colorScheme: 'light' });
}

/** Clicks a download link of the open step menu; the file's suggested name and text. */
async function download(step: string, testId: string): Promise<{ name: string; text: string }> {
  const [file] = await Promise.all([page.waitForEvent('download'), page.click(`[data-step=${step}] [data-testid=${testId}]`)]);
  return { name: file.suggestedFilename(), text: readFileSync((await file.path())!, 'utf8') };
}

describe('pages a marketer can use', () => {
  afterAll(() => {
    trickle?.kill();
  });

  beforeAll(async () => {
    tenant = await createTenant(2);
    const base = `/tenants/${tenant.name}`;
    expect((await api('PUT', `${base}/crowds/launch`, { body: CROWD.join('\n'), headers: { 'content-type': 'text/plain' } })).status).toBe(201);
    const definition = { ...welcomeJourney, goal: { condition: 'event.type == "purchase"' } };
    const created = await api('POST', `${base}/workflows`, { body: { name: 'Welcome journey', definition, draft: welcomeJourneyDraft } });
    expect(created.status).toBe(201);
    workflowId = created.body.id;
    expect((await api('POST', `${base}/workflows/${workflowId}/start`, { body: { crowd: 'launch' } })).status).toBeLessThan(300);
    const instanceId: string = (await api('GET', `${base}/workflows/${workflowId}`)).body.running.instanceId;
    const counts = () => api('GET', `${base}/instances/${instanceId}/counts`).then((answer) => answer.body);
    await waitFor('the crowd in the welcome step', counts, (body) => body.steps?.welcome === CROWD.length);
    // users 2 and 3 buy while in "welcome": they move to "customer" and reach the goal from "welcome"
    const events = [2, 3].map((user) => ({ user, type: 'purchase' }));
    expect((await api('POST', '/events', { token: tenant.key, body: { events } })).status).toBe(202);
    await waitFor('two conversions', counts, (body) => body.converted === 2);
    page = await studio.open(`/t/${tenant.name}/workflows/${workflowId}`);
  });

  it('names exports for the journey, the step and the day, and exports the users who converted from a step', async () => {
    await eventually(() => countOf('customer'), 20_000).toBe('2');
    await page.locator('[data-step=customer] [data-testid=step-menu]').click();
    expect(await download('customer', 'export-csv')).toEqual({ name: `welcome-journey-customer-${today()}.csv`, text: '2\n3\n' });
    expect((await download('customer', 'export-roaring')).name).toBe(`welcome-journey-customer-${today()}.roaring`);
    await page.keyboard.press('Escape');

    await page.locator('[data-step=welcome] [data-testid=step-menu]').click();
    const converted = page.locator('[data-step=welcome] [data-testid=export-converted]');
    expect(await converted.textContent()).toBe('Export converted users (CSV)');
    expect(await download('welcome', 'export-converted')).toEqual({ name: `welcome-journey-welcome-converted-${today()}.csv`, text: '2\n3\n' });
    await shotEveryWay('01-step-menu');
  });

  it('closes the “View first users” popover on Escape and gives the focus back to what opened it', async () => {
    const menuButton = page.locator('[data-step=welcome] [data-testid=step-menu]');
    if ((await page.locator('[data-step=welcome] .step-menu-panel').count()) === 0) await menuButton.click();
    const viewFirst = page.locator('[data-step=welcome]').getByRole('button', { name: 'View first users' });
    await viewFirst.focus();
    await page.keyboard.press('Enter');
    const firstUsers = page.locator('[data-step=welcome] [data-testid=first-users]');
    await eventually(() => firstUsers.textContent()).toBe('1, 4, 5, 6');
    await shotEveryWay('02-first-users');
    await viewFirst.focus();
    await page.keyboard.press('Escape');
    expect(await firstUsers.count()).toBe(0);
    expect(await focusedLabel()).toBe('View first users');
    // a second Escape closes the menu and gives the focus to the menu's button
    await page.keyboard.press('Escape');
    expect(await page.locator('[data-step=welcome] .step-menu-panel').count()).toBe(0);
    expect(await focusedLabel()).toBe('Menu of step welcome');
    // the step is still there: the keys went to the menu, not the canvas
    expect(await countOf('welcome')).toBe('4');
  });

  it('copies an API key’s secret with a Copy button and says so; the scopes look like the rest of the form', async () => {
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write']);
    await page.goto(`/t/${tenant.name}/keys`);
    await page.locator('[data-testid=key-name]').click();
    await page.keyboard.type('crm sync');
    // Tab to the scopes: "ingest" is ticked already, Space ticks "read"
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.getAttribute('data-testid'))).toBe('key-scope-read');
    await page.keyboard.press('Space');
    await page.locator('[data-testid=key-create]').click();
    const secret = (await page.locator('[data-testid=key-secret]').textContent()) ?? '';
    expect(secret).toMatch(/^cfk_/);

    const copy = page.locator('[data-testid=key-secret-copy]');
    expect(await copy.textContent()).toBe('Copy');
    await copy.focus();
    await page.keyboard.press('Enter');
    await eventually(() => page.locator('[data-testid=key-secret-copied]').textContent()).toBe('Copied to the clipboard.');
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(secret);
    expect(await copy.textContent()).toBe('✓ Copied');
    expect(await copy.evaluate((button) => button === document.activeElement)).toBe(true);
    // said where a screen reader hears it: inside a live region
    expect(await page.locator('[data-testid=key-secret-copied]').evaluate((element) => element.closest('[role=status]') !== null)).toBe(true);

    // the scopes' legend reads as the form's labels, their box as its inputs
    const style = (selector: string) =>
      page.locator(selector).evaluate((element) => {
        const css = getComputedStyle(element);
        return { font: css.fontSize, color: css.color, border: css.borderTopColor, radius: css.borderTopLeftRadius, width: css.borderTopWidth };
      });
    const nameLabel = await page.locator('[data-testid=key-form] label', { hasText: 'Name' }).evaluate((label) => {
      const css = getComputedStyle(label);
      return { font: css.fontSize, color: css.color };
    });
    const legend = await style('[data-testid=key-scopes] legend');
    expect({ font: legend.font, color: legend.color }).toEqual(nameLabel);
    const input = await style('[data-testid=key-name]');
    const scopes = await style('[data-testid=key-scopes]');
    expect({ border: scopes.border, radius: scopes.radius, width: scopes.width }).toEqual({ border: input.border, radius: input.radius, width: input.width });
    await shotEveryWay('03-keys');
  });

  it('says in one line what a tenant and a partition are where tenants are listed and created', async () => {
    await page.goto('/');
    const help = page.getByTestId('tenant-help');
    expect(await help.textContent()).toMatch(/^A tenant is an isolated account .*; a partition is a share of its users .*\.$/);
    // the partitions box is described by it: a screen reader says it on reaching the box
    await page.getByTestId('tenant-name').click();
    await page.keyboard.type('shop-eu');
    await page.keyboard.press('Tab');
    const partitions = page.getByTestId('tenant-partitions');
    expect(await partitions.evaluate((box) => box === document.activeElement)).toBe(true);
    expect(await partitions.evaluate((box) => document.getElementById(box.getAttribute('aria-describedby') ?? '')?.textContent)).toBe(await help.textContent());
    await page.keyboard.press('ControlOrMeta+a');
    await page.keyboard.type('2');
    await shotEveryWay('04-tenants');
    await partitions.focus();
    await page.keyboard.press('Enter');
    await page.waitForURL((url) => url.pathname === '/t/shop-eu');
    expect((await api('GET', '/tenants/shop-eu')).body).toMatchObject({ name: 'shop-eu', partitions: 2 });
    expect((await api('DELETE', '/tenants/shop-eu')).status).toBeLessThan(300);
  });

  it('charts counts over time: the goal and exit steps first, the conversion as a number, step lines, no label twice, readable in the dark', async () => {
    await page.goto(`/t/${tenant.name}/workflows/${workflowId}`);
    await eventually(() => countOf('customer'), 20_000).toBe('2');
    const chartButton = page.getByTestId('chart');
    await chartButton.focus();
    await page.keyboard.press('Enter');
    const dialog = page.getByTestId('counts-chart');
    await dialog.waitFor();
    expect(await page.getByTestId('chart-goal').textContent()).toBe('★ Goal 33.3% converted: 2 of the 6 users who entered');
    // the series that say how the journey ends are drawn first: the goal's and the exit steps'
    const checked = () =>
      dialog
        .locator('.chart-controls input[type=checkbox]')
        .evaluateAll((boxes) => boxes.filter((box) => (box as HTMLInputElement).checked).map((box) => box.getAttribute('data-testid')));
    expect(await checked()).toEqual(['chart-step-customer', 'chart-step-done', 'chart-converted']);
    const plot = page.getByTestId('counts-chart-plot');
    await eventually(async () => Number(await plot.getAttribute('data-points')), 20_000).toBeGreaterThanOrEqual(2);
    await eventually(() => plot.locator('.recharts-line').count()).toBe(4);

    // a step is added with the keyboard
    await page.getByTestId('chart-step-welcome').focus();
    await page.keyboard.press('Space');
    await eventually(() => plot.locator('.recharts-line').count()).toBe(5);
    // counts hold from sample to sample: straight steps, no Bézier curves
    const paths = await plot.locator('.recharts-line-curve').evaluateAll((curves) => curves.map((curve) => curve.getAttribute('d') ?? ''));
    expect(paths.length).toBe(5);
    for (const d of paths) expect(d).not.toMatch(/[Cc]/);
    // each time on the axis once
    const tickLabels = plot.locator('.recharts-cartesian-axis-tick-value[orientation=bottom]');
    await eventually(() => tickLabels.count()).toBeGreaterThanOrEqual(2);
    const labels = await tickLabels.allTextContents();
    expect(new Set(labels).size).toBe(labels.length);

    for (const colorScheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme });
      const conversionContrast = async () => {
        const colors = await page.evaluate(() => ({
          line: getComputedStyle(document.querySelector('.conversion-line .recharts-line-curve')!).stroke,
          background: getComputedStyle(document.querySelector('[data-testid=counts-chart]')!).backgroundColor,
        }));
        return contrast(colors.line, colors.background);
      };
      // the line is redrawn in the scheme's colours once the page hears of the change
      await eventually(conversionContrast, 5_000).toBeGreaterThanOrEqual(4.5);
    }
    await page.emulateMedia({ colorScheme: 'light' });
    await shotEveryWay('05-chart');
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    expect(await chartButton.evaluate((button) => button === document.activeElement)).toBe(true);
  });

  it('opens the demo on a running journey whose counts move as the trickle’s events arrive', async () => {
    // `npm run demo` seeds, then trickles events; here at 2,000 users into a tenant of this test's own
    const demo = { ...process.env, CROWDFLOW_ADMIN_TOKEN: inject('adminToken'), CROWDFLOW_DEMO_TENANT: uniqueName('demo'), CROWDFLOW_DEMO_USERS: '2000' };
    const seed = spawn('node', ['--import', 'tsx', 'scripts/seed.ts', inject('baseUrl')], { env: demo, stdio: ['ignore', 'pipe', 'inherit'] });
    let seeded = '';
    seed.stdout.on('data', (chunk) => (seeded += chunk));
    expect(await new Promise((done) => seed.on('exit', done)), seeded).toBe(0);
    expect(seeded).toContain('running');
    trickle = spawn('node', ['--import', 'tsx', 'scripts/trickle.ts', inject('baseUrl')], {
      env: { ...demo, CROWDFLOW_TRICKLE_MS: '250', CROWDFLOW_TRICKLE_EVENTS: '10' },
      stdio: 'ignore',
    });

    // the newcomer picks the demo tenant and its journey: running, with counts that move
    await page.goto('/');
    await page.getByTestId('tenant-link').filter({ hasText: demo.CROWDFLOW_DEMO_TENANT }).click();
    const row = page.getByRole('row', { name: /Welcome journey/ });
    expect(await row.locator('.badge').textContent()).toBe('running');
    await row.getByRole('link', { name: 'Welcome journey' }).click();
    await eventually(async () => Number(await countOf('welcome')), 20_000).toBeGreaterThan(0);
    const first = Number(await countOf('welcome'));
    await eventually(async () => Number(await countOf('welcome')), 20_000).toBeLessThan(first);
    const later = Number(await countOf('welcome'));
    await eventually(async () => Number(await countOf('welcome')), 20_000).toBeLessThan(later);
    await eventually(async () => Number(await countOf('customer')), 20_000).toBeGreaterThan(0);
    await eventually(() => page.getByTestId('goal-result').textContent()).toMatch(/^★ Goal [1-9]\d* converted/);
    await shotEveryWay('06-demo');
    trickle.kill();
  });
});

/** WCAG contrast ratio of two `rgb(r, g, b)` colours. */
function contrast(a: string, b: string): number {
  const luminance = (color: string) => {
    const [r, g, b] = (color.match(/\d+(\.\d+)?/g) ?? []).slice(0, 3).map((channel) => {
      const c = Number(channel) / 255;
      return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const [light, dark] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (light + 0.05) / (dark + 0.05);
}
