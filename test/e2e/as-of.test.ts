import { readFileSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { openBuySkipJourney } from '../fixtures/journeys';
import { api, createTenant } from '../helpers/api';
import { waitFor } from '../helpers/wait-for';
import { eventually, useStudio } from './browser';

// "As of" on a running journey (issue 38 §2), used as a marketer does: the date-time typed into the picker with the
// keyboard, the canvas showing each step's users at that moment marked as the past, the step menu exporting the users
// then, and Escape going back to the live counts.

let page: Page;
const studio = useStudio('as-of');
const CROWD = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
/** A whole second after the first events moved users and before the second ones did. */
let moment: number;

const countOf = (step: string) => page.locator(`[data-step=${step}] [data-testid=step-count]`).getAttribute('data-count');
const focusedLabel = () => page.evaluate(() => document.activeElement?.getAttribute('aria-label') ?? document.activeElement?.id);

describe('As of: the step counts of a running journey at a past moment', () => {
  beforeAll(async () => {
    const tenant = await createTenant(2);
    const base = `/tenants/${tenant.name}`;
    expect((await api('PUT', `${base}/crowds/launch`, { body: CROWD.join('\n'), headers: { 'content-type': 'text/plain' } })).status).toBe(201);
    const created = await api('POST', `${base}/workflows`, { body: { name: 'As of journey', definition: openBuySkipJourney } });
    expect(created.status).toBe(201);
    expect((await api('POST', `${base}/workflows/${created.body.id}/start`, { body: { crowd: 'launch' } })).status).toBeLessThan(300);
    const instanceId: string = (await waitFor('the running instance', async () => (await api('GET', `${base}/workflows/${created.body.id}`)).body.running))
      .instanceId;
    const counts = async () => (await api('GET', `${base}/instances/${instanceId}/counts`)).body;
    const send = async (users: number[], type: string) =>
      expect((await api('POST', '/events', { token: tenant.key, body: { events: users.map((user) => ({ user, type })) } })).status).toBe(202);
    await waitFor('the crowd waiting', counts, (body) => body.steps?.wait === 10);
    await send([1, 2, 3, 4], 'open');
    await waitFor('four opened', counts, (body) => body.steps?.opened === 4);
    // The picker names whole seconds: the moment is the next one, and the next events come after it.
    moment = Math.ceil((Date.now() + 1) / 1000) * 1000;
    await waitFor(
      'the moment to pass',
      () => Date.now(),
      (now) => now > moment,
    );
    await send([5, 6, 7, 8], 'buy');
    await waitFor('four bought', counts, (body) => body.steps?.bought === 4);
    page = await studio.open(`/t/${tenant.name}/workflows/${created.body.id}`);
  });

  it('shows the counts then, marked as past, exports the users then, and goes back to live with Escape', async () => {
    await eventually(() => countOf('wait'), 20_000).toBe('2');
    const status = page.getByTestId('as-of-status');
    expect(await status.textContent()).toBe('● Live counts');

    // Typed as in Chromium's en-US picker: month, day, year, → to the time, hour, minute, second, AM/PM.
    const picker = page.getByLabel('As of');
    await picker.focus();
    const parts = await page.evaluate((ms) => {
      const at = new Date(ms);
      const two = (n: number) => String(n).padStart(2, '0');
      const hour = at.getHours() % 12 || 12;
      const local = `${at.getFullYear()}-${two(at.getMonth() + 1)}-${two(at.getDate())}T${two(at.getHours())}:${two(at.getMinutes())}`;
      return {
        date: `${two(at.getMonth() + 1)}${two(at.getDate())}${at.getFullYear()}`,
        time: `${two(hour)}${two(at.getMinutes())}${two(at.getSeconds())}${at.getHours() < 12 ? 'A' : 'P'}`,
        value: at.getSeconds() ? `${local}:${two(at.getSeconds())}` : local,
      };
    }, moment);
    await page.keyboard.type(parts.date);
    await page.keyboard.press('ArrowRight');
    await page.keyboard.type(parts.time);
    expect(await picker.inputValue()).toBe(parts.value);
    await page.keyboard.press('Enter');

    await eventually(() => status.textContent()).toMatch(/^Past · counts as of /);
    await eventually(() => Promise.all(['wait', 'opened', 'bought'].map(countOf))).toEqual(['6', '4', '0']);
    expect(await page.locator('.editor-canvas.past').count()).toBe(1);
    expect(await focusedLabel()).toBe(await picker.getAttribute('id'));
    await studio.shot('01-past-counts');

    // The step menu says whose users it exports, and exports them as of that moment.
    await page.locator('[data-step=wait] [data-testid=step-menu]').click();
    expect(await page.locator('[data-step=wait] [data-testid=export-as-of]').textContent()).toMatch(/^Users as of .+ \(past\)$/);
    expect(await page.getByRole('button', { name: 'Save as crowd…' }).count()).toBe(0);
    await studio.shot('02-past-step-menu');
    const [file] = await Promise.all([page.waitForEvent('download'), page.click('[data-step=wait] [data-testid=export-csv]')]);
    const stamp = new Date(moment).toISOString().slice(0, 19).replaceAll(':', '-');
    expect(file.suggestedFilename()).toBe(`as-of-journey-wait-at-${stamp}Z.csv`);
    expect(
      readFileSync((await file.path())!, 'utf8')
        .trim()
        .split('\n')
        .map(Number),
    ).toEqual([5, 6, 7, 8, 9, 10]);
    await page.keyboard.press('Escape');
    expect(await focusedLabel()).toBe('Menu of step wait');

    // Escape in the strip is the way back to the live counts; the focus stays on the picker.
    await picker.focus();
    await page.keyboard.press('Escape');
    await eventually(() => status.textContent()).toBe('● Live counts');
    await eventually(() => Promise.all(['wait', 'opened', 'bought'].map(countOf))).toEqual(['2', '4', '4']);
    expect(await page.locator('.editor-canvas.past').count()).toBe(0);
    expect(await focusedLabel()).toBe(await picker.getAttribute('id'));
    await studio.shot('03-back-to-live');
  });
});
