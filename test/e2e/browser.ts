import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, afterEach, expect, inject } from 'vitest';
import { welcomeJourney, welcomeJourneyDraft } from '../../core/model/sample-workflows';
import { api } from '../helpers/api';

// Shared by the studio's e2e files: Debian's Chromium, screenshots in test-results/, a signed-in page per file, and
// the few gestures a marketer makes on the canvas (drop a step, drag an edge) written once.

export const SHOTS = 'test-results';

export async function launch(): Promise<Browser> {
  mkdirSync(SHOTS, { recursive: true });
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
}

export async function openPage(browser: Browser, viewport = { width: 1440, height: 900 }, colorScheme: 'light' | 'dark' = 'light'): Promise<Page> {
  const context = await browser.newContext({ baseURL: inject('baseUrl'), viewport, acceptDownloads: true, colorScheme });
  return context.newPage();
}

/** Polls until the assertion holds; the server and the browser share two busy cores, so allow 10 s. */
export function eventually<T>(read: () => Promise<T> | T, timeout = 10_000) {
  return expect.poll(read, { timeout });
}

export async function shot(page: Page, name: string) {
  await page.screenshot({ path: `${SHOTS}/${name}.png` });
}

export async function signIn(page: Page) {
  await page.goto('/signin');
  await page.fill('input[name=token]', inject('adminToken'));
  await page.click('button[type=submit]');
  await page.waitForURL((url) => url.pathname === '/');
}

/**
 * The studio of one e2e file, its screenshots named `<prefix>-…`. Call it in the file's body (it registers the hooks
 * that close Chromium after the file and take a screenshot of each failed test); `open` in beforeAll.
 */
export function useStudio(prefix: string) {
  let browser: Browser | undefined;
  let page: Page | undefined;
  afterAll(async () => {
    await browser?.close();
  });
  afterEach(async (context) => {
    if (page && context.task.result?.state === 'fail') await shot(page, `${prefix}-failed-${context.task.name.slice(0, 40).replace(/\W+/g, '-')}`);
  });
  return {
    /** Launches Chromium and signs a page in (then goes to `path`, when given). */
    async open(path?: string): Promise<Page> {
      browser = await launch();
      page = await openPage(browser);
      await signIn(page);
      if (path) await page.goto(path);
      return page;
    },
    shot: (name: string) => shot(page!, `${prefix}-${name}`),
  };
}

/** Saves the demo journey (laid out by its draft) for `tenant` and opens it in the editor; returns its id. */
export async function openWelcomeJourney(page: Page, tenant: string): Promise<string> {
  const created = await api('POST', `/tenants/${tenant}/workflows`, {
    body: { name: 'Welcome journey', definition: welcomeJourney, draft: welcomeJourneyDraft },
  });
  expect(created.status).toBe(201);
  await page.goto(`/t/${tenant}/workflows/${created.body.id}`);
  await page.locator('[data-step=welcome]').waitFor();
  return created.body.id;
}

/** Drops a palette step at a point of the canvas (relative to its top-left corner) and names it. */
export async function dropStep(page: Page, kind: string, at: { x: number; y: number }, name: string) {
  await page.locator(`[data-testid=palette-${kind}]`).dragTo(page.locator('[data-testid=canvas]'), { targetPosition: at });
  const nameInput = page.locator('[data-testid=step-name-input]');
  await eventually(() => nameInput.inputValue()).toMatch(new RegExp(`^${kind}`));
  await nameInput.fill(name);
  await page.locator(`[data-step="${name}"]`).waitFor();
}

/** Drags from a step's output handle to another step's input handle. */
export async function connect(page: Page, from: string, handle: string, to: string) {
  const source = await page.locator(`[data-step="${from}"] [data-testid="handle-${handle}"]`).boundingBox();
  const target = await page.locator(`[data-step="${to}"] .handle-in`).boundingBox();
  if (!source || !target) throw new Error(`cannot see handles of ${from} or ${to}`);
  await page.mouse.move(source.x + source.width / 2, source.y + source.height / 2);
  await page.mouse.down();
  await page.mouse.move(target.x + target.width / 2, target.y + target.height / 2, { steps: 12 });
  await page.mouse.up();
}

/** Selects a step by clicking its header. */
export async function selectStep(page: Page, name: string) {
  await clickStepHeader(page, name);
  await eventually(() => page.locator('[data-testid=step-name-input]').inputValue()).toBe(name);
}

/**
 * Clicks a step's header left of its name, as a person picks a step. The point is scaled to the header as drawn: a
 * fitted canvas (a tall journey under the As of strip) draws it a few pixels high, and a point 10 px down fell on the
 * step's summary below it.
 */
export async function clickStepHeader(page: Page, name: string) {
  const header = page.locator(`[data-step="${name}"] header`);
  const box = await header.boundingBox();
  if (!box) throw new Error(`step ${name} has no header on the canvas`);
  await header.click({ position: { x: Math.min(60, box.width / 3), y: Math.min(10, box.height / 2) } });
}

/** The axe-core serious and critical violations of the page as it is now (rule id: first offending element). */
export async function seriousViolations(page: Page): Promise<string[]> {
  const source = (await import('node:fs')).readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
  await page.addScriptTag({ content: source });
  const results = await page.evaluate(async () => {
    const axe = (
      window as unknown as {
        axe: { run: (context: unknown, options: unknown) => Promise<{ violations: { id: string; impact: string; nodes: { target: string[] }[] }[] }> };
      }
    ).axe;
    return axe.run(document, { resultTypes: ['violations'] });
  });
  return results.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map(
      (v) =>
        `${v.id}: ${v.nodes
          .map((n) => n.target.join(' '))
          .slice(0, 3)
          .join(', ')}`,
    );
}
