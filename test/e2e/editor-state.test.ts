import type { Locator, Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { welcomeJourney, welcomeJourneyDraft } from '../../core/model/sample-workflows';
import { api, createTenant } from '../helpers/api';
import { eventually, selectStep, useStudio } from './browser';

// Three details of the editor a marketer met (issue 32 §2): the "unsaved" badge is the canvas compared with the saved
// journey (undoing every edit makes it go, undoing past a save brings it back and says so); the problems bar never
// hides the lowest step; and a user's entry into a journey reads "entered at start", not "start → start".

let page: Page;
let tenant = '';
const studio = useStudio('editor-state');

const badge = () => page.locator('.badge.unsaved');
const undo = () => page.getByTestId('undo');
const isFocused = (box: Locator) => box.evaluate((element) => element === document.activeElement);

async function typeKeys(box: Locator, text: string) {
  for (const key of text) {
    await page.keyboard.type(key);
    expect(await isFocused(box)).toBe(true);
  }
}

async function newJourney(name: string, definition = welcomeJourney, draft: unknown = welcomeJourneyDraft): Promise<string> {
  const created = await api('POST', `/tenants/${tenant}/workflows`, { body: { name, definition, draft } });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body.id;
}

describe('the editor’s saved state, problems bar and entry moves', () => {
  beforeAll(async () => {
    tenant = (await createTenant(1)).name;
    page = await studio.open();
  });

  it('drops the unsaved badge once every edit is undone, and says so when undo goes back past a save', async () => {
    const id = await newJourney('Welcome journey');
    await page.goto(`/t/${tenant}/workflows/${id}`);
    await page.locator('[data-step=customer]').waitFor();
    expect(await badge().count()).toBe(0);

    await selectStep(page, 'welcome');
    const label = page.getByTestId('step-label-input');
    await label.click();
    await page.keyboard.press('End');
    await typeKeys(label, ' now');
    await eventually(() => badge().count()).toBe(1);
    // the copy kept in this browser is written meanwhile
    await eventually(() => page.evaluate(() => Object.keys(localStorage).filter((k) => k.includes('draft')).length)).toBe(1);
    // every edit undone (keys typed further apart than a moment are undo steps of their own on a busy machine)
    while (!(await undo().isDisabled())) {
      expect(await badge().count()).toBe(1);
      await undo().click();
    }
    expect(await label.inputValue()).toBe('Signed up: what do they do first?');
    await eventually(() => badge().count()).toBe(0);
    // nothing is left to offer back on the next visit
    expect(await page.evaluate(() => Object.keys(localStorage).filter((k) => k.includes('draft')).length)).toBe(0);
    await page.reload();
    await page.locator('[data-step=customer]').waitFor();
    expect(await page.getByTestId('draft-offer').count()).toBe(0);

    // a change saved, then undone: the canvas differs from the saved journey again, and Undo says it reaches past the save
    await selectStep(page, 'welcome');
    await label.click();
    await page.keyboard.press('End');
    await typeKeys(label, '!');
    await eventually(() => badge().count()).toBe(1);
    await page.getByTestId('save').click();
    await eventually(() => page.getByTestId('save-notice').textContent()).toMatch(/^Saved/);
    expect(await badge().count()).toBe(0);
    expect(await undo().getAttribute('aria-label')).toBe('Undo: change the label of step “welcome”, made before the last save');
    await undo().click();
    await eventually(() => badge().count()).toBe(1);
    expect(await page.getByTestId('undo-notice').textContent()).toBe(
      'Undone: change the label of step “welcome” (made before the last save: Save to keep the canvas as it is now)',
    );
    await studio.shot('01-undone-past-the-save');
    await page.getByTestId('redo').click();
    await eventually(() => badge().count()).toBe(0);
  });

  it('keeps the lowest step in view and clickable when the problems bar appears, in a 1024×700 window', async () => {
    await page.setViewportSize({ width: 1024, height: 700 });
    try {
      const id = await newJourney('Problems journey');
      await page.goto(`/t/${tenant}/workflows/${id}`);
      await page.locator('[data-step=done]').waitFor();
      await eventually(() => page.locator('.react-flow__viewport').getAttribute('style')).toMatch(/scale/);
      expect(await page.getByTestId('problems-bar').count()).toBe(0);

      // empty the delay's duration: a problem, and the bar under the canvas
      await selectStep(page, 'pro_nurture');
      const after = page.getByTestId('delay-input');
      await after.click();
      await page.keyboard.press('ControlOrMeta+a');
      await page.keyboard.press('Backspace');
      expect(await isFocused(after)).toBe(true);
      await page.getByTestId('problems-bar').waitFor();

      const canvas = (await page.locator('.react-flow').boundingBox())!;
      const bar = (await page.getByTestId('problems-bar').boundingBox())!;
      const done = page.locator('.react-flow__node:has([data-step=done])');
      await eventually(async () => {
        const box = (await done.boundingBox())!;
        return box.y + box.height <= Math.min(canvas.y + canvas.height, bar.y);
      }).toBe(true);
      await studio.shot('02-problems-bar-1024');
      // the step's middle is the step's own (nothing over it), and a click there selects it
      const box = (await done.boundingBox())!;
      const hit = await page.evaluate(
        ([x, y]) => document.elementFromPoint(x, y)?.closest('[data-step]')?.getAttribute('data-step'),
        [box.x + box.width / 2, box.y + box.height / 2],
      );
      expect(hit).toBe('done');
      await page.mouse.click(box.x + box.width / 2, box.y + 10);
      await eventually(() => page.getByTestId('step-name-input').inputValue()).toBe('done');
    } finally {
      await page.setViewportSize({ width: 1440, height: 900 });
    }
  });

  it('says a user’s entry as "entered at start", in the step menu and in Follow a user', async () => {
    expect((await api('PUT', `/tenants/${tenant}/crowds/first`, { body: '1\n2\n', headers: { 'content-type': 'text/plain' } })).status).toBe(201);
    const definition = {
      steps: [
        { name: 'start', kind: 'branch' as const, branches: [{ condition: 'event.type == "buy"', next: 'bought' }] },
        { name: 'bought', kind: 'direct' as const },
      ],
    };
    const id = await newJourney('From scratch', definition, { positions: { start: { x: 0, y: 0 }, bought: { x: 0, y: 210 } }, labels: {} });
    expect((await api('POST', `/tenants/${tenant}/workflows/${id}/start`, { body: { crowd: 'first' } })).status).toBeLessThan(300);
    await page.goto(`/t/${tenant}/workflows/${id}`);
    await eventually(() => page.locator('[data-step=start] [data-testid=step-count]').getAttribute('data-count'), 20_000).toBe('2');

    await page.locator('[data-step=start] [data-testid=step-menu]').click();
    const find = page.locator('[data-step=start] input[aria-label="User ID"]');
    await find.click();
    await typeKeys(find, '1');
    await page.keyboard.press('Enter');
    await eventually(() => page.locator('[data-step=start] [data-testid=where-move]').first().textContent()).toMatch(/^entered at start · this instance · /);
    await studio.shot('03-entered-at-start');
    await page.keyboard.press('Escape');
    // Follow a user is in the side panel while no step is selected: a click on the canvas's empty part
    await page.locator('.react-flow__pane').click({ position: { x: 20, y: 20 } });

    const follow = page.getByTestId('user-path-input');
    await follow.click();
    await typeKeys(follow, '1');
    await page.keyboard.press('Enter');
    await eventually(() => page.getByTestId('user-path-move').evaluateAll((rows) => rows.map((row) => row.textContent?.split(' · ')[0]))).toEqual([
      'entered at start',
    ]);
  });
});
