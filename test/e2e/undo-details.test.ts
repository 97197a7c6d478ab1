import type { Locator, Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { welcomeJourney, welcomeJourneyDraft } from '../../core/model/sample-workflows';
import { api, createTenant } from '../helpers/api';
import { eventually, selectStep, useStudio } from './browser';

// Undo says what it will take back ("Undo: delete step “customer”"), and says what it did; Ctrl/Cmd+Z undoes on the
// canvas, and never takes an undo meant for a text box (the box's own typing is the box's to undo).

let page: Page;
let workflowId = '';
let tenant = '';
const studio = useStudio('undo-details');

const undo = () => page.getByTestId('undo');
const redo = () => page.getByTestId('redo');
const steps = () => page.locator('[data-testid=step-node]').evaluateAll((nodes) => nodes.map((node) => node.getAttribute('data-step')).sort());
const isFocused = (box: Locator) => box.evaluate((element) => element === document.activeElement);

describe('undo details', () => {
  beforeAll(async () => {
    tenant = (await createTenant(1)).name;
    const created = await api('POST', `/tenants/${tenant}/workflows`, {
      body: { name: 'Welcome journey', definition: welcomeJourney, draft: welcomeJourneyDraft },
    });
    expect(created.status).toBe(201);
    workflowId = created.body.id;
    page = await studio.open();
  });

  it('names the edit Undo and Redo would act on, and says what was undone', async () => {
    await page.goto(`/t/${tenant}/workflows/${workflowId}`);
    await page.locator('[data-step=customer]').waitFor();
    expect(await undo().getAttribute('title')).toBe('Nothing to undo');
    expect(await undo().isDisabled()).toBe(true);

    // a label typed key by key is one edit
    await selectStep(page, 'welcome');
    const label = page.getByTestId('step-label-input');
    await label.click();
    await page.keyboard.press('End');
    await page.keyboard.type(' (new)');
    expect(await label.inputValue()).toBe('Signed up: what do they do first? (new)');
    await eventually(() => undo().getAttribute('aria-label')).toBe('Undo: change the label of step “welcome”');

    await selectStep(page, 'customer');
    await page.getByRole('button', { name: 'Delete step' }).click();
    await eventually(() => page.locator('[data-step=customer]').count()).toBe(0);
    expect(await undo().getAttribute('aria-label')).toBe('Undo: delete step “customer”');
    expect(await undo().getAttribute('title')).toBe('Undo: delete step “customer” (Ctrl/Cmd+Z on the canvas)');
    await undo().hover();
    await studio.shot('01-undo-names-the-edit');

    await undo().click();
    await eventually(() => page.locator('[data-step=customer]').count()).toBe(1);
    expect(await page.getByTestId('undo-notice').textContent()).toBe('Undone: delete step “customer”');
    expect(await redo().getAttribute('aria-label')).toBe('Redo: delete step “customer”');
    expect(await undo().getAttribute('aria-label')).toBe('Undo: change the label of step “welcome”');
    await redo().click();
    await eventually(() => page.locator('[data-step=customer]').count()).toBe(0);
    expect(await page.getByTestId('undo-notice').textContent()).toBe('Redone: delete step “customer”');
    await studio.shot('02-redone');
  });

  it('undoes with Ctrl/Cmd+Z on the canvas, never from a text box', async () => {
    const before = await steps();
    expect(before).not.toContain('customer');
    // in the workflow's name box, Ctrl+Z is the box's: the deleted step stays deleted
    const name = page.getByRole('textbox', { name: 'Workflow name' });
    await name.click();
    await page.keyboard.press('End');
    await page.keyboard.type('!');
    await page.keyboard.press('ControlOrMeta+z');
    expect(await isFocused(name)).toBe(true);
    expect(await steps()).toEqual(before);
    // in a step's text box too
    await selectStep(page, 'welcome');
    const label = page.getByTestId('step-label-input');
    await label.click();
    await page.keyboard.type('x');
    await page.keyboard.press('ControlOrMeta+z');
    expect(await isFocused(label)).toBe(true);
    expect(await steps()).toEqual(before);
    await page.keyboard.press('Escape');

    // on the canvas it is the journey's: each Ctrl/Cmd+Z takes back what the Undo button names (the box's own undo of
    // the typed key may itself have been an edit), until the deleted step is back
    await page.locator('.react-flow__pane').click({ position: { x: 20, y: 80 } });
    for (let presses = 0; (await page.locator('[data-step=customer]').count()) === 0; presses++) {
      expect(presses).toBeLessThan(4);
      const next = (await undo().getAttribute('aria-label')) ?? '';
      expect(next).toMatch(/^Undo: (change the label of step “welcome”|delete step “customer”)$/);
      await page.keyboard.press('ControlOrMeta+z');
      await eventually(() => page.getByTestId('undo-notice').textContent()).toBe(next.replace('Undo: ', 'Undone: '));
    }
    expect(await page.getByTestId('undo-notice').textContent()).toBe('Undone: delete step “customer”');
    // a step focused on the canvas takes Ctrl/Cmd+Shift+Z as redo
    await page.locator('[data-step=welcome]').locator('..').focus();
    await page.keyboard.press('ControlOrMeta+Shift+z');
    await eventually(() => page.locator('[data-step=customer]').count()).toBe(0);
    await studio.shot('03-keyboard');
  });
});
