import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { welcomeJourney, welcomeJourneyDraft } from '../../core/model/sample-workflows';
import { api, createTenant } from '../helpers/api';
import { eventually, selectStep, useStudio } from './browser';

// The canvas as a marketer reads it at 100% (issue 32 §2): edge labels in type as large as the steps' own small text;
// after "fit view" no step lies under the minimap (a narrow canvas shows none); and a step that grows (its counts, a
// problems line) makes room below it, so no edge label ever lies on a step, at 1024×700 and at 1440 wide.

let page: Page;
let key: string;
const studio = useStudio('canvas-legibility');
const CROWD = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];

/** What lies on what, as drawn now: an edge label over a step, the minimap over a step ("label over step"). */
function overlaps(): Promise<string[]> {
  return page.evaluate(() => {
    const boxes = (selector: string, name: (element: Element) => string) =>
      [...document.querySelectorAll(selector)].map((element) => ({ name: name(element), box: element.getBoundingClientRect() }));
    const steps = boxes('[data-testid=step-node]', (element) => element.getAttribute('data-step') ?? '');
    const labels = boxes('[data-testid=edge-label]', (element) => `label “${element.textContent}”`);
    const minimap = boxes('.react-flow__minimap', () => 'minimap');
    const hit = (a: DOMRect, b: DOMRect) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
    return [...labels, ...minimap].flatMap((thing) => steps.filter((step) => hit(thing.box, step.box)).map((step) => `${thing.name} over step ${step.name}`));
  });
}

/** Steps drawn outside the canvas (cut off by its edges, or under the goal's strip atop it) after a fit. */
function outside(): Promise<string[]> {
  return page.evaluate(() => {
    const pane = document.querySelector('.react-flow')!.getBoundingClientRect();
    return [...document.querySelectorAll('[data-testid=step-node]')]
      .filter((step) => {
        const box = step.getBoundingClientRect();
        return box.top < pane.top || box.bottom > pane.bottom || box.left < pane.left || box.right > pane.right;
      })
      .map((step) => step.getAttribute('data-step') ?? '');
  });
}

/** Resizes the window and presses the canvas's "fit view" button, as the marketer would; waits for the fit to settle. */
async function fitAt(width: number, height: number) {
  await page.setViewportSize({ width, height });
  await page.locator('.react-flow__controls-fitview').click();
  const viewport = () => page.locator('.react-flow__viewport').getAttribute('style');
  let last = '';
  await eventually(async () => {
    const now = await viewport();
    const settled = now === last;
    last = now ?? '';
    return settled;
  }).toBe(true);
}

describe('a legible canvas', () => {
  beforeAll(async () => {
    const tenant = await createTenant(2);
    const base = `/tenants/${tenant.name}`;
    expect((await api('PUT', `${base}/crowds/launch`, { body: CROWD.join('\n'), headers: { 'content-type': 'text/plain' } })).status).toBe(201);
    const definition = { ...welcomeJourney, goal: { condition: 'event.type == "purchase"' } };
    const created = await api('POST', `${base}/workflows`, { body: { name: 'Welcome journey', definition, draft: welcomeJourneyDraft } });
    expect(created.status).toBe(201);
    expect((await api('POST', `${base}/workflows/${created.body.id}/start`, { body: { crowd: 'launch' } })).status).toBeLessThan(300);
    key = tenant.key;
    page = await studio.open();
    await page.setViewportSize({ width: 1440, height: 900 });
    await page.goto(`/t/${tenant.name}/workflows/${created.body.id}`);
  });

  it('writes edge labels in 12 px type, as the steps’ own small text', async () => {
    await eventually(() => page.locator('[data-step=welcome] [data-testid=step-count]').getAttribute('data-count'), 20_000).toBe('10');
    // users take each of welcome's three outputs, so its edges carry counts beside their conditions
    const events = [
      { user: 1, type: 'open' },
      { user: 2, type: 'purchase' },
      { user: 4, type: 'open' },
    ];
    expect((await api('POST', '/events', { token: key, body: { events } })).status).toBe(202);
    await eventually(() => page.locator('[data-testid=edge-count]').count(), 20_000).toBeGreaterThanOrEqual(2);
    await fitAt(1440, 900);
    const sizes = await page.locator('[data-testid=edge-label]').evaluateAll((labels) => labels.map((label) => getComputedStyle(label).fontSize));
    expect(sizes.length).toBeGreaterThanOrEqual(3);
    for (const size of sizes) expect(size).toBe('12px');
    await studio.shot('01-labels-1440');
  });

  it('keeps every step clear of the minimap and the edge labels after a fit, at 1440 and at 1024×700', async () => {
    await fitAt(1440, 900);
    expect(await page.locator('.react-flow__minimap').count()).toBe(1);
    expect(await overlaps()).toEqual([]);
    expect(await outside()).toEqual([]);
    await fitAt(1024, 700);
    // the canvas between the palette and the inspector is too narrow for a minimap that covers no step
    expect(await page.locator('.react-flow__minimap').count()).toBe(0);
    expect(await overlaps()).toEqual([]);
    expect(await outside()).toEqual([]);
    await studio.shot('02-fit-1024x700');
  });

  it('makes room under a step that grows a problems line, so its edge labels stay off the steps below', async () => {
    await page.setViewportSize({ width: 1440, height: 900 });
    await selectStep(page, 'welcome');
    const welcome = page.locator('[data-step=welcome]');
    const before = (await welcome.boundingBox())!.height;
    // a timeout without its duration or its step: two problems said on the step, which grows by their line
    await page.getByTestId('timeout-add').click();
    const timeout = page.getByTestId('timeout-input');
    await timeout.click();
    await page.keyboard.press('ControlOrMeta+a');
    await page.keyboard.press('Backspace');
    expect(await timeout.evaluate((element) => element === document.activeElement)).toBe(true);
    await eventually(() => welcome.locator('[data-testid=step-problems]').count()).toBe(1);
    await eventually(async () => (await welcome.boundingBox())!.height).toBeGreaterThan(before);
    await page.keyboard.press('Escape');
    await fitAt(1440, 900);
    expect(await overlaps()).toEqual([]);
    expect(await outside()).toEqual([]);
    await studio.shot('03-grown-step-1440');
    await fitAt(1024, 700);
    expect(await overlaps()).toEqual([]);
    expect(await outside()).toEqual([]);
    await studio.shot('04-grown-step-1024x700');

    // typing the duration back: the problems line goes, and the labels are still clear of every step
    await selectStep(page, 'welcome');
    await page.getByTestId('timeout-input').click();
    await page.keyboard.type('2d');
    expect(await page.getByTestId('timeout-input').inputValue()).toBe('2d');
    await fitAt(1440, 900);
    expect(await overlaps()).toEqual([]);
  });
});
