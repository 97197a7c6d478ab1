import type { Locator, Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { welcomeJourney, welcomeJourneyDraft } from '../../core/model/sample-workflows';
import { api, createTenant } from '../helpers/api';
import { clickStepHeader, eventually, selectStep, useStudio } from './browser';

// Reading the journey off the graph (issue 32 §2), as a marketer does on the running demo journey with a goal: each
// branch edge says which users take it (the branch's name, or its condition in a few words) and how many did, without
// running over a step at 1280 or 1024 px; what the goal achieved is on the canvas and in the side panel.

let page: Page;
let key: string;
let tenantName: string;
const studio = useStudio('journey-reading');
const CROWD = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];

const countOf = (step: string) => page.locator(`[data-step=${step}] [data-testid=step-count]`).getAttribute('data-count');
const edgeLabels = () =>
  page.locator('[data-testid=edge-label]').evaluateAll((labels) => labels.map((label) => [label.getAttribute('data-output'), label.textContent]));

async function send(events: { user: number; type: string }[]) {
  expect((await api('POST', '/events', { token: key, body: { events } })).status).toBe(202);
}

/** Edge labels lying over a step or over another label, as "label over step" (the page as it is drawn now). */
function collisions(): Promise<string[]> {
  return page.evaluate(() => {
    const boxes = (selector: string, name: (element: Element) => string) =>
      [...document.querySelectorAll(selector)].map((element) => ({ name: name(element), box: element.getBoundingClientRect() }));
    const steps = boxes('[data-testid=step-node]', (element) => element.getAttribute('data-step') ?? '');
    const labels = boxes('[data-testid=edge-label]', (element) => element.textContent ?? '');
    const hit = (a: DOMRect, b: DOMRect) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
    return labels.flatMap((label) => [
      ...steps.filter((step) => hit(label.box, step.box)).map((step) => `“${label.name}” over step ${step.name}`),
      ...labels.filter((other) => other !== label && hit(label.box, other.box)).map((other) => `“${label.name}” over “${other.name}”`),
    ]);
  });
}

/** Where the canvas draws its viewport, steps and edge labels, read after the browser painted twice. */
function drawn(): Promise<string> {
  return page.evaluate(async () => {
    await new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));
    const viewport = document.querySelector('.react-flow__viewport')?.getAttribute('style') ?? '';
    const boxes = [...document.querySelectorAll('[data-testid=step-node], [data-testid=edge-label]')].map((element) => {
      const box = element.getBoundingClientRect();
      return [box.left, box.top, box.width, box.height].map(Math.round).join(',');
    });
    return JSON.stringify([viewport, boxes]);
  });
}

/**
 * Sets the window's size and fits the journey into the canvas, as the marketer would with the fit button; returns
 * once the drawing holds still (two reads a repaint apart agree), instead of sleeping for an animation.
 */
async function windowOf(width: number, height: number) {
  await page.setViewportSize({ width, height });
  await page.locator('.react-flow__controls-fitview').click();
  let before = await drawn();
  await eventually(async () => {
    const now = await drawn();
    const still = now === before;
    before = now;
    return still;
  }).toBe(true);
}

/** Clicks into a box, empties it with the keyboard and types `text` key by key; the box keeps each key and the focus. */
async function typeInto(box: Locator, text: string) {
  await box.click();
  await page.keyboard.press('ControlOrMeta+a');
  await page.keyboard.press('Backspace');
  for (let i = 1; i <= text.length; i++) {
    await page.keyboard.type(text[i - 1]);
    expect(await box.evaluate((element) => [(element as HTMLInputElement).value, element === document.activeElement])).toEqual([text.slice(0, i), true]);
  }
}

describe('reading the journey off the graph', () => {
  beforeAll(async () => {
    const tenant = await createTenant(2);
    const base = `/tenants/${tenant.name}`;
    expect((await api('PUT', `${base}/crowds/launch`, { body: CROWD.join('\n'), headers: { 'content-type': 'text/plain' } })).status).toBe(201);
    const definition = { ...welcomeJourney, goal: { condition: 'event.type == "purchase"' } };
    const created = await api('POST', `${base}/workflows`, { body: { name: 'Welcome journey', definition, draft: welcomeJourneyDraft } });
    expect(created.status).toBe(201);
    expect((await api('POST', `${base}/workflows/${created.body.id}/start`, { body: { crowd: 'launch' } })).status).toBeLessThan(300);
    key = tenant.key;
    tenantName = tenant.name;
    page = await studio.open();
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.goto(`/t/${tenant.name}/workflows/${created.body.id}`);
  });

  it('labels each branch edge with its condition in a few words and the users who took it, clear of the steps', async () => {
    await eventually(() => countOf('welcome'), 20_000).toBe(String(CROWD.length));
    // users 1 and 4 open the welcome mail (no plan: they go to "nurture"), users 2 and 3 buy (to "customer")
    await send([
      { user: 1, type: 'open' },
      { user: 2, type: 'purchase' },
      { user: 3, type: 'purchase' },
      { user: 4, type: 'open' },
    ]);
    await eventually(() => countOf('customer'), 20_000).toBe('2');
    await eventually(() => countOf('nurture')).toBe('2');
    const welcomeOutputs = () => edgeLabels().then((labels) => labels.filter(([output]) => ['purchase', 'open and plan = pro', 'open'].includes(output ?? '')));
    await eventually(welcomeOutputs).toEqual(
      expect.arrayContaining([
        ['purchase', 'purchase2'],
        ['open and plan = pro', 'open and plan = pro'],
        ['open', 'open2'],
      ]),
    );
    expect(JSON.stringify(await edgeLabels())).not.toMatch(/if \d/);
    // the full condition is a hover away
    expect(await page.locator('[data-testid=edge-label][data-output="open and plan = pro"]').getAttribute('title')).toBe(
      'event.type == "open" && profile.plan == "pro"',
    );

    await windowOf(1280, 800);
    expect(await collisions()).toEqual([]);
    await studio.shot('01-edge-labels-1280');
    await windowOf(1024, 700);
    expect(await collisions()).toEqual([]);
    await studio.shot('02-edge-labels-1024');
    await windowOf(1280, 800);
  });

  it('draws the name typed for a branch on its edge, and keeps it through a save', async () => {
    await selectStep(page, 'welcome');
    await typeInto(page.locator('[data-testid=branch-1] [data-testid=branch-label-input]'), 'Pro users who opened');
    await eventually(() => page.locator('[data-testid=edge-label][data-output="Pro users who opened"]').count()).toBe(1);
    await page.keyboard.press('Escape');
    await page.getByTestId('save').click();
    // a branch's name is canvas text, like a step's label: saved without a new version
    await eventually(() => page.getByTestId('save-notice').textContent()).toContain('Saved');
    await page.reload();
    await page.locator('[data-step=welcome]').waitFor();
    await eventually(() => page.locator('[data-testid=edge-label][data-output="Pro users who opened"]').count()).toBe(1);
    expect(await collisions()).toEqual([]);
  });

  it('shows what the goal achieved: on each step users converted from, in a corner of the canvas and in the side panel', async () => {
    // user 1 buys while waiting in "nurture" (a timer step: the event moves nobody, and still converts)
    await send([{ user: 1, type: 'purchase' }]);
    await eventually(() => page.getByTestId('goal-result').textContent(), 20_000).toBe('★ Goal 3 converted · 30% of 10 entered');
    const converted = (step: string) => page.locator(`[data-step=${step}] [data-testid=step-converted]`);
    // users 2 and 3 bought while in "welcome", which all 10 reached; 1 of the 2 who reached "nurture" bought there
    expect(await converted('welcome').textContent()).toBe('★ 2 · 20%');
    expect(await converted('welcome').getAttribute('aria-label')).toBe('2 converted: 20% of the 10 users who reached this step');
    expect(await converted('nurture').textContent()).toBe('★ 1 · 50%');
    expect(await converted('customer').count()).toBe(0);

    await page.locator('.react-flow__pane').click({ position: { x: 20, y: 80 } });
    const summary = page.getByTestId('goal-summary');
    expect(await summary.locator('p').textContent()).toBe('3 of the 10 users who entered reached the goal (30%).');
    expect(await summary.getByTestId('goal-step').evaluateAll((rows) => rows.map((row) => row.textContent))).toEqual(['welcome220% of 10', 'nurture150% of 2']);
    await selectStep(page, 'welcome');
    expect(await page.getByTestId('step-goal').textContent()).toBe('★ Goal: 2 of the 10 users who reached this step converted from it (20%).');

    await windowOf(1280, 800);
    expect(await collisions()).toEqual([]);
    await studio.shot('03-goal-1280');
    await page.keyboard.press('Escape');
    await page.locator('.react-flow__pane').click({ position: { x: 20, y: 80 } });
    await windowOf(1024, 700);
    expect(await collisions()).toEqual([]);
    await studio.shot('04-goal-1024');
    await windowOf(1280, 800);
  });

  it('adds a “Wait for event” step from the palette with the keyboard: one event rule and a timeout, no else', async () => {
    await page.getByTestId('palette-wait-for-event').focus();
    await page.keyboard.press('Enter');
    const step = page.locator('[data-step=wait_for_event]');
    await step.waitFor();
    await eventually(() => page.getByTestId('step-name-input').inputValue()).toBe('wait_for_event');
    expect(await step.locator('.step-summary').textContent()).toBe('waits up to 2d for purchase');
    // its outputs: the event waited for, and the timeout; no "else", which would move users on any event at all
    expect(await step.locator('.handle-label').allTextContents()).toEqual(['purchase', 'after 2d']);
    expect(await page.locator('[data-testid=branch-0]').count()).toBe(1);
    expect(await page.locator('[data-testid=branch-1]').count()).toBe(0);
    expect(await page.getByTestId('timeout-input').inputValue()).toBe('2d');

    await typeInto(page.locator('[data-testid=branch-0] [data-testid=rule-value]'), 'signup');
    await typeInto(page.getByTestId('timeout-input'), '3d');
    expect(await step.locator('.step-summary').textContent()).toBe('waits up to 3d for signup');
    // what is left to do is to connect it: nothing about its branches
    const problems = await page.locator('[data-testid=inspector-problems] p').allTextContents();
    expect(problems.length).toBeGreaterThan(0);
    for (const problem of problems) expect(problem).toMatch(/^(Connect output|Cannot be reached)/);
    await studio.shot('05-wait-for-event-1280');
    await page.setViewportSize({ width: 1024, height: 700 });
    await step.scrollIntoViewIfNeeded();
    await studio.shot('06-wait-for-event-1024');
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  it('says what is wrong in the marketer’s words, naming the step and the box, never the validator’s', async () => {
    const raw = /Too (small|big)|expected (string|number)|entry\.event|timeout\.after|^Workflow /;
    // the wait step of the previous test goes again: Delete on the canvas (it holds nobody)
    await clickStepHeader(page, 'wait_for_event');
    await page.keyboard.press('Delete');
    await eventually(() => page.locator('[data-step=wait_for_event]').count()).toBe(0);

    // users also enter on an event: until its type is written, the journey says which box is empty
    await page.locator('.react-flow__pane').click({ position: { x: 20, y: 80 } });
    await page.getByTestId('entry-enabled').click();
    const entryProblem = 'Entry event type is empty: write the event type that lets users in, e.g. signup';
    await eventually(() => page.getByTestId('workflow-problem').allTextContents()).toEqual([entryProblem]);
    expect(await page.getByTestId('problem-text').allTextContents()).toEqual([entryProblem]);
    await studio.shot('07-problem-entry-1280');
    await typeInto(page.getByTestId('entry-event-input'), 'signup');
    await eventually(() => page.getByTestId('problems-bar').count()).toBe(0);

    // a wait timeout emptied with the keyboard: the step, its box and what to write
    await selectStep(page, 'welcome');
    await page.getByTestId('timeout-add').click();
    await typeInto(page.getByTestId('timeout-input'), '');
    const timeoutProblem = 'Timeout is empty: write how long to wait, e.g. 2d';
    await eventually(() => page.locator('[data-testid=inspector-problems] p').allTextContents()).toContain(timeoutProblem);
    const bar = page.getByTestId('problems-bar');
    expect(await bar.getByTestId('problem-link').allTextContents()).toEqual([
      'welcome: Connect output “timeout” to the step users go to next',
      `welcome: ${timeoutProblem}`,
    ]);
    for (const text of [await bar.textContent(), await page.getByTestId('inspector').textContent()]) expect(text).not.toMatch(raw);
    await studio.shot('08-problem-timeout-1280');
    await page.setViewportSize({ width: 1024, height: 700 });
    await studio.shot('09-problem-timeout-1024');
    await page.setViewportSize({ width: 1280, height: 800 });
    await typeInto(page.getByTestId('timeout-input'), '2d');
    await eventually(() => page.locator('[data-testid=inspector-problems] p').allTextContents()).not.toContain(timeoutProblem);
  });
  it('writes one label for the outputs of a step that lead to the same step, not one label over another', async () => {
    // A branch whose first two outputs both go to "bought": their labels used to be drawn on the same spot.
    const definition = {
      steps: [
        {
          name: 'welcome',
          kind: 'branch',
          branches: [
            { condition: 'event.type == "buy"', next: 'bought' },
            { condition: 'event.type == "gift"', next: 'bought' },
            { condition: 'event.type == "leave"', next: 'gone' },
          ],
        },
        { name: 'bought', kind: 'direct' },
        { name: 'gone', kind: 'direct' },
      ],
    };
    const created = await api('POST', `/tenants/${tenantName}/workflows`, { body: { name: 'Two ways in', definition } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    await page.goto(`/t/${tenantName}/workflows/${created.body.id}`);
    await page.locator('[data-step=bought]').waitFor();
    await eventually(async () => (await edgeLabels()).map(([output]) => output)).toEqual(expect.arrayContaining(['buy or gift', 'leave']));
    expect((await edgeLabels()).length).toBe(2);
    await windowOf(1280, 800);
    expect(await collisions()).toEqual([]);
    await studio.shot('10-two-outputs-one-step');
  });
});
