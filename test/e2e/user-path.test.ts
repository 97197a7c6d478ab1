import type { Locator, Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { welcomeJourney, welcomeJourneyDraft } from '../../core/model/sample-workflows';
import { api, createTenant } from '../helpers/api';
import { eventually, useStudio } from './browser';

// "Follow a user" in the editor (issue 32 §2): a marketer types a user id and sees the way that user went through the
// running journey, marked on the canvas (the steps passed through, the step they are in now, the edges taken) and in
// words beside it, read from GET …/users/{user}; a user outside the journey is said to be so.

let page: Page;
let key = '';
let tenant = '';
const studio = useStudio('user-path');
const CROWD = [1, 2, 3, 4, 5];

const marks = () =>
  page
    .locator('[data-testid=step-node][data-path]')
    .evaluateAll((nodes) => nodes.map((node) => `${node.getAttribute('data-step')}:${node.getAttribute('data-path')}`).sort());
const isFocused = (box: Locator) => box.evaluate((element) => element === document.activeElement);

/** Empties the box and types the id key by key, then Enter; the box keeps each key and the focus. */
async function follow(user: string) {
  const box = page.getByTestId('user-path-input');
  await box.click();
  await page.keyboard.press('ControlOrMeta+a');
  await page.keyboard.press('Backspace');
  for (let i = 1; i <= user.length; i++) {
    await page.keyboard.type(user[i - 1]);
    expect(await box.inputValue()).toBe(user.slice(0, i));
    expect(await isFocused(box)).toBe(true);
  }
  await page.keyboard.press('Enter');
}

/** Empties a box and types `text` key by key: the box keeps each key and the focus. */
async function typeInto(box: Locator, text: string) {
  await box.click();
  await page.keyboard.press('ControlOrMeta+a');
  await page.keyboard.press('Backspace');
  for (let i = 1; i <= text.length; i++) {
    await page.keyboard.type(text[i - 1]);
    expect(await box.inputValue()).toBe(text.slice(0, i));
    expect(await isFocused(box)).toBe(true);
  }
}

describe('following one user through the journey', () => {
  beforeAll(async () => {
    const created0 = await createTenant(2);
    key = created0.key;
    tenant = created0.name;
    const base = `/tenants/${tenant}`;
    expect((await api('PUT', `${base}/crowds/launch`, { body: CROWD.join('\n'), headers: { 'content-type': 'text/plain' } })).status).toBe(201);
    const created = await api('POST', `${base}/workflows`, { body: { name: 'Welcome journey', definition: welcomeJourney, draft: welcomeJourneyDraft } });
    expect(created.status).toBe(201);
    expect((await api('POST', `${base}/workflows/${created.body.id}/start`, { body: { crowd: 'launch' } })).status).toBeLessThan(300);
    page = await studio.open(`/t/${tenant}/workflows/${created.body.id}`);
  });

  it('marks the steps and edges user 2 went through, and says them in words', async () => {
    await eventually(() => page.locator('[data-step=welcome] [data-testid=step-count]').getAttribute('data-count'), 20_000).toBe('5');
    expect((await api('POST', '/events', { token: key, body: { events: [{ user: 2, type: 'purchase' }] } })).status).toBe(202);
    await eventually(() => page.locator('[data-step=customer] [data-testid=step-count]').getAttribute('data-count'), 20_000).toBe('1');
    // the counts made every step taller after the first fit: the lowest step is still wholly in view
    const canvas = (await page.locator('.react-flow').boundingBox())!;
    await eventually(async () => {
      const done = (await page.locator('.react-flow__node:has([data-step=done])').boundingBox())!;
      return done.y + done.height <= canvas.y + canvas.height;
    }).toBe(true);

    await follow('2');
    await eventually(() => page.getByTestId('user-path-summary').textContent()).toBe('User 2 is in “customer” now.');
    expect(await page.getByTestId('user-path-move').evaluateAll((rows) => rows.map((row) => row.textContent?.split(' · ')[0]))).toEqual([
      'entered at welcome',
      'welcome → customer',
    ]);
    expect(await isFocused(page.getByTestId('user-path-input'))).toBe(true);
    expect(await marks()).toEqual(['customer:current', 'welcome:visited']);
    await studio.shot('01-user-2');

    // someone still waiting where they started
    await follow('3');
    await eventually(() => page.getByTestId('user-path-summary').textContent()).toBe('User 3 is in “welcome” now.');
    expect(await page.getByTestId('user-path-move').evaluateAll((rows) => rows.map((row) => row.textContent?.split(' · ')[0]))).toEqual(['entered at welcome']);
    expect(await marks()).toEqual(['welcome:current']);

    // someone the journey never had
    await follow('99');
    await eventually(() => page.getByTestId('user-path-summary').textContent()).toBe(
      'User 99 is not in this journey: not in the crowd it started with, or already gone from it.',
    );
    expect(await marks()).toEqual([]);

    // Clear takes the marks off the canvas
    await follow('2');
    await eventually(() => marks()).toEqual(['customer:current', 'welcome:visited']);
    await page.getByTestId('user-path-clear').click();
    expect(await marks()).toEqual([]);
  });

  it('previews the path a user would take now, with events pretended, moving nobody', async () => {
    // user 4 is a pro user: an "open" takes them to the pro tips, a delay, the A/B split and out at done
    expect((await api('POST', `/tenants/${tenant}/profiles`, { body: [{ user: 4, attributes: { plan: 'pro' } }] })).status).toBe(200);
    await typeInto(page.getByTestId('path-preview-user'), '4');
    await typeInto(page.getByTestId('path-preview-events'), 'open plan=pro');
    await page.keyboard.press('Enter');
    await eventually(() => page.getByTestId('path-preview-end').textContent()).toBe('Then leaves the journey at “done”.');
    expect(await page.getByTestId('path-preview-summary').textContent()).toBe('User 4 is in “welcome” now.');
    const hops = await page.getByTestId('path-preview-hop').evaluateAll((rows) => rows.map((row) => row.textContent?.split(' · ')[0]));
    expect(hops.slice(0, 2)).toEqual(['welcome → pro_nurture', 'pro_nurture → ab_test']);
    expect(hops[2]).toMatch(/^ab_test → offer_[ab]$/);
    const offer = hops[2]!.split(' → ')[1];
    expect(hops[3]).toBe(`${offer} → done`);
    expect(await marks()).toEqual(['ab_test:would', 'done:would-end', `${offer}:would`, 'pro_nurture:would', 'welcome:would'].sort());
    await studio.shot('02-preview-user-4');

    // user 3 has no profile: an "open" leads to nurture, whose timer condition is false for them now
    await typeInto(page.getByTestId('path-preview-user'), '3');
    await typeInto(page.getByTestId('path-preview-events'), 'open');
    await page.getByTestId('path-preview-submit').click();
    await eventually(() => page.getByTestId('path-preview-end').textContent()).toBe(
      "Then waits in “nurture”: the timer's condition is false for this user now.",
    );
    expect(await marks()).toEqual(['nurture:would-end', 'welcome:would']);
    // without an event, user 3 waits where they are
    await typeInto(page.getByTestId('path-preview-events'), '');
    await page.getByTestId('path-preview-submit').click();
    await eventually(() => page.getByTestId('path-preview-end').textContent()).toBe('Then waits in “welcome” for an event that one of its branches takes.');
    expect(await marks()).toEqual(['welcome:would-end']);

    // nobody moved: the counts are those of the journey's own moves
    expect(await page.locator('[data-step=welcome] [data-testid=step-count]').getAttribute('data-count')).toBe('4');
    expect(await page.locator('[data-step=pro_nurture] [data-testid=step-count]').getAttribute('data-count')).toBe('0');

    // an id that is not one is said so, and Clear takes the marks off
    await typeInto(page.getByTestId('path-preview-user'), '4x');
    await page.keyboard.press('Enter');
    expect(await page.getByTestId('path-preview-problem').textContent()).toMatch(/whole number/);
    expect(await marks()).toEqual([]);
    await typeInto(page.getByTestId('path-preview-user'), '2');
    await page.keyboard.press('Enter');
    await eventually(() => marks()).toEqual(['customer:would-end']);
    expect(await page.getByTestId('path-preview-summary').textContent()).toBe('User 2 is in “customer” now.');
    await page.getByTestId('path-preview-clear').click();
    expect(await marks()).toEqual([]);
  });

  it('says what is wrong with an id that is not one', async () => {
    await follow('abc');
    await eventually(() => page.locator('[data-testid=user-path] [data-testid=error]').textContent()).toMatch(/user/i);
    expect(await marks()).toEqual([]);
  });
});
