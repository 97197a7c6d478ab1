import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { welcomeJourney, welcomeJourneyDraft } from '../../core/model/sample-workflows';
import { api, createTenant } from '../helpers/api';
import { eventually, launch, openPage, selectStep, shot, signIn } from './browser';

// Accessibility as a keyboard and screen-reader user meets it: axe-core finds nothing, of any impact, on every studio
// page in light and dark mode; Tab first reaches a skip link that lands in the page; and whatever dialog a person
// opens, closing it (Escape or its × button) puts the focus back on the button that opened it, not on BODY.

let browser: Browser;
let page: Page;
let tenant: { name: string };
let idle = '';
let running = '';

type AxeNode = { target: string[]; any: { id: string; data?: { fgColor: string; bgColor: string; contrastRatio: number } }[] };
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** Every axe-core violation of the page as it is now, whatever its impact (rule id: first offending elements). */
async function violations(at: Page): Promise<string[]> {
  // evaluated rather than added as a <script>: the studio's CSP admits no inline script
  await at.evaluate(AXE);
  const results = await at.evaluate(() =>
    (window as unknown as { axe: { run: (c: unknown, o: unknown) => Promise<{ violations: { id: string; impact: string; nodes: AxeNode[] }[] }> } }).axe.run(
      document,
      { resultTypes: ['violations'] },
    ),
  );
  const node = (n: AxeNode) => {
    const contrast = n.any.find((check) => check.id === 'color-contrast')?.data;
    return n.target.join(' ') + (contrast ? ` ${contrast.fgColor} on ${contrast.bgColor} = ${contrast.contrastRatio}` : '');
  };
  return results.violations.map((v) => `${v.id} (${v.impact}): ${v.nodes.slice(0, 3).map(node).join(', ')}`);
}

/** Each page, and what shows that its data has arrived (axe on a page still loading checks a spinner). */
const pages = () => [
  { path: '', ready: `a[href$="/workflows/${running}"]` },
  { path: `/workflows/${running}`, ready: '[data-step=welcome] [data-testid=step-count]' },
  { path: '/crowds', ready: '[data-testid=crowd-row-count]' },
  { path: '/profiles', ready: '[data-testid=profile-field]' },
  { path: '/keys', ready: '[data-testid=key-row]' },
  { path: '/webhooks', ready: '[data-webhook=crm]' },
  { path: '/procedures', ready: '[data-testid=procedure-open]' },
];

/** Opens each page as a person would see it (the editor with a step selected, a procedure and a webhook opened). */
async function axeEveryPage(at: Page, mode: string): Promise<Record<string, string[]>> {
  const found: Record<string, string[]> = {};
  for (const { path, ready } of pages()) {
    await at.goto(`/t/${tenant.name}${path}`);
    await at.locator(ready).first().waitFor();
    if (path.startsWith('/workflows')) {
      // nothing selected: the inspector shows the journey's entry and goal
      await eventually(() => at.locator('.state-loading').count()).toBe(0);
      found['/editor (journey)'] = await violations(at);
      await selectStep(at, 'welcome');
    }
    if (path === '/procedures') await at.locator('[data-testid=procedure-open]').first().click();
    if (path === '/webhooks') await at.click('[data-webhook=crm] [data-testid=webhook-open]');
    await eventually(() => at.locator('.state-loading').count()).toBe(0);
    const name = path.startsWith('/workflows') ? '/editor' : path || '/';
    found[name] = await violations(at);
    // every page in every mode, to be looked at before a change to the studio is called done
    await shot(at, `a11y-${mode}${name === '/' ? '-workflows' : name.replace('/', '-')}`);
  }
  return found;
}

/** Eight page states axe-checked and screenshotted: over vitest's 60 s on a loaded 2-core machine (load 26: 61-64 s). */
const EVERY_PAGE_TIMEOUT_MS = 180_000;

const NONE = { '/': [], '/editor (journey)': [], '/editor': [], '/crowds': [], '/profiles': [], '/keys': [], '/webhooks': [], '/procedures': [] };

const focused = (opener: Locator) => opener.evaluate((element) => element === document.activeElement);
const activeElement = () => page.evaluate(() => `${document.activeElement?.tagName} ${document.activeElement?.textContent?.slice(0, 30)}`);

/** Opens a dialog from `opener` (a click, or Enter on the focused button), closes it, and expects the focus back. */
async function openAndClose(opener: Locator, dialog: string, open: 'click' | 'Enter', close: 'Escape' | 'button') {
  if (open === 'click') await opener.click();
  else {
    await opener.focus();
    await page.keyboard.press('Enter');
  }
  const box = page.locator(`[data-testid=${dialog}]`);
  await box.waitFor();
  expect(await focused(opener)).toBe(false);
  if (close === 'Escape') await page.keyboard.press('Escape');
  else await box.getByRole('button', { name: 'Close' }).click();
  await box.waitFor({ state: 'detached' });
  expect(await focused(opener), `focus after closing ${dialog} with ${close}: ${await activeElement()}`).toBe(true);
}

describe('accessibility of the studio', () => {
  beforeAll(async () => {
    tenant = await createTenant(1);
    const base = `/tenants/${tenant.name}`;
    const lines = Array.from({ length: 50 }, (_, user) => JSON.stringify({ user, attributes: { plan: user % 2 ? 'pro' : 'free', tz: 'Europe/Brussels' } }));
    expect((await api('POST', `${base}/profiles/import`, { body: lines.join('\n'), headers: { 'content-type': 'application/x-ndjson' } })).status).toBe(200);
    expect((await api('PUT', `${base}/crowds/launch`, { body: '1\n2\n3\n4\n5', headers: { 'content-type': 'text/plain' } })).status).toBe(201);
    expect((await api('POST', `${base}/webhooks`, { body: { name: 'crm', url: 'https://hooks.example.com/crowdflow' } })).status).toBe(201);
    const journey = { definition: welcomeJourney, draft: welcomeJourneyDraft };
    idle = (await api('POST', `${base}/workflows`, { body: { name: 'Idle journey', ...journey } })).body.id;
    running = (await api('POST', `${base}/workflows`, { body: { name: 'Welcome journey', ...journey } })).body.id;
    expect((await api('POST', `${base}/workflows/${running}/start`, { body: { crowd: 'launch' } })).status).toBeLessThan(300);
    browser = await launch();
    page = await openPage(browser);
    await signIn(page);
  });

  afterAll(async () => {
    await browser?.close();
  });

  afterEach(async (context) => {
    if (context.task.result?.state === 'fail') await shot(page, `a11y-failed-${context.task.name.slice(0, 40).replace(/\W+/g, '-')}`);
  });

  it(
    'has no axe-core violation of any impact on any studio page, in light mode',
    async () => {
      expect(await axeEveryPage(page, 'light')).toEqual(NONE);
    },
    EVERY_PAGE_TIMEOUT_MS,
  );

  it(
    'has no axe-core violation of any impact on any studio page, in dark mode',
    async () => {
      const dark = await openPage(browser, { width: 1440, height: 900 }, 'dark');
      try {
        await signIn(dark);
        expect(await axeEveryPage(dark, 'dark')).toEqual(NONE);
      } finally {
        await dark.context().close();
      }
    },
    EVERY_PAGE_TIMEOUT_MS,
  );

  for (const scheme of ['light', 'dark'] as const) {
    it(
      `has no axe-core violation of any impact on any studio page in a 1024×700 window, ${scheme} mode`,
      async () => {
        const small = await openPage(browser, { width: 1024, height: 700 }, scheme);
        try {
          await signIn(small);
          expect(await axeEveryPage(small, `${scheme}-1024`)).toEqual(NONE);
        } finally {
          await small.context().close();
        }
      },
      EVERY_PAGE_TIMEOUT_MS,
    );
  }

  it('offers a skip link as the first Tab stop, and Enter on it moves on into the page', async () => {
    await page.goto(`/t/${tenant.name}/crowds`);
    await page.locator('[data-testid=crowd-row-count]').waitFor();
    await page.keyboard.press('Tab');
    const skip = page.getByRole('link', { name: 'Skip to content' });
    expect(await focused(skip)).toBe(true);
    // visible once focused (a sighted keyboard user sees where they are), inside the window
    const box = await skip.boundingBox();
    expect(box && box.y >= 0 && box.height > 0).toBe(true);
    await shot(page, 'a11y-skip-link');
    await page.keyboard.press('Enter');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('main');
    // the next Tab is the page's first control, not the tenant picker or the sections of the top bar
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.closest('main')?.id)).toBe('main');
    expect(await page.locator('[data-testid=crowd-file]').evaluate((input) => input === document.activeElement)).toBe(true);
  });

  it('gives the focus back to the button that opened a dialog, closed with Escape or its × button', async () => {
    await page.goto(`/t/${tenant.name}/workflows/${idle}`);
    await page.locator('[data-step=welcome]').waitFor();
    const start = page.locator('[data-testid=start]');
    const versions = page.locator('[data-testid=versions]');
    const history = page.getByRole('button', { name: 'History', exact: true });
    await openAndClose(start, 'start-dialog', 'Enter', 'Escape');
    await openAndClose(start, 'start-dialog', 'click', 'button');
    await openAndClose(versions, 'versions-dialog', 'click', 'Escape');
    await openAndClose(versions, 'versions-dialog', 'Enter', 'button');
    await openAndClose(history, 'history-dialog', 'Enter', 'Escape');
    await openAndClose(history, 'history-dialog', 'click', 'button');

    await page.goto(`/t/${tenant.name}/workflows/${running}`);
    await page.locator('[data-step=welcome] [data-testid=step-count]').waitFor();
    const chart = page.locator('[data-testid=chart]');
    await openAndClose(chart, 'counts-chart', 'click', 'Escape');
    await openAndClose(chart, 'counts-chart', 'Enter', 'button');
    const crowd = page.locator('[data-testid=update-crowd]');
    await openAndClose(crowd, 'crowd-dialog', 'Enter', 'Escape');
    await openAndClose(crowd, 'crowd-dialog', 'click', 'button');

    // a new saved version: the running instance is behind, and the editor offers to apply it
    const v2 = { ...welcomeJourney, steps: welcomeJourney.steps.map((s) => (s.name === 'welcome' ? { ...s, ttl: '3d' } : s)) };
    expect((await api('PUT', `/tenants/${tenant.name}/workflows/${running}`, { body: { definition: v2 } })).status).toBe(200);
    await page.reload();
    const apply = page.locator('[data-testid=apply-version]');
    await openAndClose(apply, 'apply-dialog', 'Enter', 'Escape');
    await openAndClose(apply, 'apply-dialog', 'click', 'button');

    // the delete question (its own dialog): the focus goes back to the step it was asked about
    await selectStep(page, 'welcome');
    const step = page.locator('.react-flow__node:has([data-step=welcome])');
    await step.focus();
    await page.keyboard.press('Delete');
    await page.locator('[data-testid=delete-dialog]').waitFor();
    await page.keyboard.press('Escape');
    await page.locator('[data-testid=delete-dialog]').waitFor({ state: 'detached' });
    expect(await focused(step), `focus after the delete question: ${await activeElement()}`).toBe(true);
  });
});
