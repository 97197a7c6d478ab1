import type { ElementHandle, Locator, Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { welcomeJourney, welcomeJourneyDraft } from '../../core/model/sample-workflows';
import { api, createTenant } from '../helpers/api';
import { clickStepHeader, eventually, selectStep, useStudio } from './browser';

// The studio's data-loss hazard (issue 32 §1): a marketer types into every kind of inspector box of the running demo
// journey one key at a time, as a person does, and the box keeps what was typed and the focus after every key; a
// Backspace or Delete meant for a box never deletes a step; deleting the entry step or a step holding users asks first.

let page: Page;
let key: string;
const studio = useStudio('rule-typing');
const shot = studio.shot;
const CROWD = [1, 2, 3, 4, 5];

/** The box's value and whether it (this very element, not a re-created one) has the focus, once the frame settled. */
async function boxState(box: ElementHandle) {
  await page.evaluate(() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done))));
  return box.evaluate((element) => ({ value: (element as HTMLInputElement).value, focused: element === document.activeElement }));
}

/**
 * Clicks into a box, empties it with the keyboard (Ctrl+A, Backspace) and types `text` key by key, checking after
 * every key that the box shows what was typed so far and still has the focus.
 */
async function typeKeyByKey(box: Locator, text: string) {
  await box.click();
  const element = (await box.elementHandle())!;
  await page.keyboard.press('ControlOrMeta+a');
  await page.keyboard.press('Backspace');
  expect(await boxState(element), 'emptied with Backspace').toEqual({ value: '', focused: true });
  for (let i = 1; i <= text.length; i++) {
    await page.keyboard.type(text[i - 1]);
    expect(await boxState(element), `after typing “${text.slice(0, i)}”`).toEqual({ value: text.slice(0, i), focused: true });
  }
}

/** Types one key into the focused select (the browser picks the option starting with it); it keeps the focus. */
async function pickByKey(select: Locator, key: string, value: string) {
  const element = (await select.elementHandle())!;
  await page.keyboard.type(key);
  expect(await boxState(element), `after typing “${key}”`).toEqual({ value, focused: true });
}

const steps = () => page.locator('[data-testid=step-node]').evaluateAll((nodes) => nodes.map((n) => n.getAttribute('data-step')));
const countOf = (step: string) => page.locator(`[data-step=${step}] [data-testid=step-count]`).getAttribute('data-count');
const activeStep = () =>
  page.evaluate(() => document.activeElement?.querySelector('[data-step]')?.getAttribute('data-step') ?? document.activeElement?.tagName);

describe('typing in the inspector', () => {
  beforeAll(async () => {
    const tenant = await createTenant(2);
    const base = `/tenants/${tenant.name}`;
    expect((await api('PUT', `${base}/crowds/launch`, { body: CROWD.join('\n'), headers: { 'content-type': 'text/plain' } })).status).toBe(201);
    const created = await api('POST', `${base}/workflows`, { body: { name: 'Welcome journey', definition: welcomeJourney, draft: welcomeJourneyDraft } });
    expect(created.status).toBe(201);
    expect((await api('POST', `${base}/workflows/${created.body.id}/start`, { body: { crowd: 'launch' } })).status).toBeLessThan(300);
    key = tenant.key;
    page = await studio.open(`/t/${tenant.name}/workflows/${created.body.id}`);
  });

  it('opens the running journey with its users on their steps', async () => {
    await eventually(() => countOf('welcome'), 20_000).toBe(String(CROWD.length));
    // user 1 opens a mail: with no plan it goes on to "nurture", where it waits for 09:00
    expect((await api('POST', '/events', { token: key, body: { events: [{ user: 1, type: 'open' }] } })).status).toBe(202);
    await eventually(() => countOf('nurture'), 20_000).toBe('1');
    expect(await countOf('welcome')).toBe(String(CROWD.length - 1));
  });

  it('keeps the focus and every key in an existing rule of a branch: field, operator, value, and in its CEL', async () => {
    await selectStep(page, 'welcome');
    const rule = page.locator('[data-testid=branch-1] .rule').nth(1);
    await typeKeyByKey(rule.locator('[data-testid=rule-field]'), 'profile.country');
    await page.keyboard.press('Tab');
    await pickByKey(rule.locator('[data-testid=operators]'), 'c', 'contains');
    await typeKeyByKey(rule.locator('[data-testid=rule-value]'), 'NL');
    const preview = page.locator('[data-testid=branch-1] [data-testid=cel-preview]');
    expect(await preview.textContent()).toBe('event.type == "open" && profile.country.contains("NL")');
    await typeKeyByKey(page.locator('[data-testid=branch-0] [data-testid=rule-value]'), 'purchase_done');
    await shot('01-rules-typed');

    await page.locator('[data-testid=branch-2]').getByRole('tab', { name: 'CEL' }).click();
    await typeKeyByKey(page.locator('[data-testid=branch-2] [data-testid=cel-input]'), 'event.type == "open" && profile.age >= 30');
    await page.getByTestId('timeout-add').click();
    await typeKeyByKey(page.getByTestId('timeout-input'), '3d');
    expect(await page.getByTestId('timeout-input-hint').textContent()).toBe('= 3 days');
    await page.getByTestId('enter-action-select').selectOption({ label: 'An action tag for integrations…' });
    await typeKeyByKey(page.getByTestId('enter-action-tag'), 'tag_entered');
    await typeKeyByKey(page.getByLabel('On leave (action tag)'), 'tag_left');
    await typeKeyByKey(page.getByTestId('ttl-input'), '12h');
    await typeKeyByKey(page.getByTestId('step-label-input'), 'Signed up: first move?');
    expect(await steps()).toContain('welcome');
    await shot('02-branch-typed');
  });

  it('keeps the focus in a timer: cron, zone mode, zone attribute, time zone and the rules of its condition', async () => {
    await selectStep(page, 'nurture');
    await typeKeyByKey(page.getByTestId('cron-input'), '0 30 8 * * 1-5');
    await page.keyboard.press('Tab');
    await pickByKey(page.getByTestId('tz-mode'), 'e', 'user');
    await typeKeyByKey(page.getByTestId('tz-attribute-input'), 'tz');
    await typeKeyByKey(page.getByTestId('tz-input'), 'Europe/Amsterdam');
    expect(await page.getByTestId('cron-description').textContent()).toContain('08:30');
    const rules = page.locator('[data-testid=condition-editor] .rule');
    await typeKeyByKey(rules.nth(0).locator('[data-testid=rule-value]'), 'loyal');
    await typeKeyByKey(rules.nth(2).locator('[data-testid=rule-value]'), '40');
    expect(await page.locator('[data-testid=cel-preview]').textContent()).toBe('inCrowd("loyal") || (profile.country == "NL" && profile.age >= 40)');
    await shot('03-timer-typed');
  });

  it('keeps the focus in a delay, a parallel step’s actions, the entry’s event type and the goal', async () => {
    await selectStep(page, 'pro_nurture');
    await typeKeyByKey(page.getByTestId('delay-input'), '1h30m');
    expect(await page.getByTestId('delay-input-hint').textContent()).toBe('= 1 hour 30 minutes');
    await selectStep(page, 'offer_a');
    await typeKeyByKey(page.getByTestId('actions-input'), 'send_discount_email, push_discount');

    await page.locator('.react-flow__pane').click({ position: { x: 20, y: 20 } });
    await page.getByTestId('entry-enabled').check();
    await typeKeyByKey(page.getByTestId('entry-event-input'), 'signup');
    await page.getByTestId('goal-enabled').check();
    // The panel holds more condition editors (the exit criteria): the goal's is the one labelled "Converted when".
    const goal = page.locator('[data-testid=workflow-panel] [data-testid=condition-editor]').filter({ hasText: 'Converted when' });
    await typeKeyByKey(goal.locator('[data-testid=rule-value]'), 'order');
    expect(await goal.locator('[data-testid=cel-preview]').textContent()).toBe('event.type == "order"');
    await goal.getByRole('tab', { name: 'CEL' }).click();
    await typeKeyByKey(goal.locator('[data-testid=cel-input]'), 'event.type == "order" && event.data.total > 10');
    expect(await steps()).toHaveLength(welcomeJourney.steps.length);
    await shot('04-goal-typed');
  });

  it('never deletes a step for a Backspace or Delete typed into a box, nor for one right after the box lost the focus', async () => {
    await selectStep(page, 'customer');
    const value = page.locator('[data-testid=step-name-input]');
    await value.click();
    for (const key of ['End', 'Backspace', 'Backspace', 'Delete', 'Home', 'Delete']) await page.keyboard.press(key);
    expect(await value.inputValue()).toBe('ustom');
    // the box loses the focus without a click anywhere (as a re-created box did): the next Backspace is still the box's
    await value.evaluate((element) => (element as HTMLInputElement).blur());
    expect(await page.evaluate(() => document.activeElement?.tagName)).toBe('BODY');
    await page.keyboard.press('Backspace');
    await page.keyboard.press('Delete');
    expect(await steps()).toContain('ustom');
    expect(await steps()).toHaveLength(welcomeJourney.steps.length);

    // the same key on the canvas, with the step clicked there, deletes it at once: it is neither the entry nor holds users
    await clickStepHeader(page, 'ustom');
    await page.keyboard.press('Backspace');
    await eventually(() => steps()).not.toContain('ustom');
    expect(await page.getByTestId('delete-dialog').count()).toBe(0);
    await page.keyboard.press('ControlOrMeta+z');
    await eventually(() => steps()).toContain('ustom');
  });

  it('asks before deleting a step holding users or the entry step; Escape keeps it and gives the focus back', async () => {
    const dialog = page.getByTestId('delete-dialog');
    await clickStepHeader(page, 'nurture');
    await page.keyboard.press('Delete');
    await dialog.waitFor();
    expect(await dialog.locator('h2').textContent()).toBe('Delete step “nurture”?');
    expect(await dialog.getByTestId('delete-risk').allTextContents()).toEqual(['“nurture” holds 1 user now.']);
    await shot('05-confirm-populated');
    await page.keyboard.press('Escape');
    await eventually(() => dialog.count()).toBe(0);
    expect(await steps()).toContain('nurture');
    expect(await activeStep()).toBe('nurture');

    await selectStep(page, 'welcome');
    const deleteButton = page.getByRole('button', { name: 'Delete step', exact: true });
    await deleteButton.click();
    await dialog.waitFor();
    expect(await dialog.getByTestId('delete-risk').allTextContents()).toEqual([`“welcome” is the entry step and holds ${CROWD.length - 1} users now.`]);
    expect(await dialog.textContent()).toContain('“nurture” would become the entry step');
    await shot('06-confirm-entry');
    await page.keyboard.press('Escape');
    await eventually(() => dialog.count()).toBe(0);
    expect(await steps()).toContain('welcome');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Delete step');

    // Enter confirms (the confirm button has the focus); Undo brings the entry step back as the entry
    await deleteButton.click();
    await dialog.waitFor();
    await page.keyboard.press('Enter');
    await eventually(() => steps()).not.toContain('welcome');
    expect(await page.locator('[data-step=nurture] .entry-badge').count()).toBe(1);
    await page.keyboard.press('ControlOrMeta+z');
    await eventually(() => steps()).toContain('welcome');
    expect(await page.locator('[data-step=welcome] .entry-badge').count()).toBe(1);
  });
});
