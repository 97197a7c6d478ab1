import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { api, createTenant } from '../helpers/api';
import { connect, dropStep, eventually, selectStep, useStudio } from './browser';

// "Every day at 09:00 in the user's time zone", drawn in the studio: a timer switched to each user's own zone, its
// profile attribute offered from the tenant's profiles, its default zone checked as it is typed, saved and kept.

let page: Page;
let tenant: { name: string; key: string };
let workflowId: string;

const studio = useStudio('local-time');
const timerOf = async () =>
  (await api('GET', `/tenants/${tenant.name}/workflows/${workflowId}`)).body.definition.steps.find((s: { name: string }) => s.name === 'morning');

describe('a local-time timer in the studio', () => {
  beforeAll(async () => {
    tenant = await createTenant(2);
    const profiles = ['Europe/Amsterdam', 'America/New_York', 'Asia/Tokyo'].map((timezone, user) => JSON.stringify({ user, attributes: { timezone } }));
    const imported = await api('POST', `/tenants/${tenant.name}/profiles/import`, {
      body: profiles.join('\n'),
      headers: { 'content-type': 'application/x-ndjson' },
    });
    expect(imported.status, JSON.stringify(imported.body)).toBe(200);
    page = await studio.open();
  });

  it('draws a timer, switches it to each user’s own zone with a default zone, and saves it', async () => {
    await page.goto(`/t/${tenant.name}`);
    await page.getByLabel('New workflow name').fill('Morning journey');
    await page.getByRole('button', { name: 'New workflow' }).click();
    await page.waitForURL(/\/workflows\/wf_/);
    workflowId = page.url().split('/').pop()!;
    await page.locator('[data-step=start]').waitFor();
    const canvas = (await page.locator('[data-testid=canvas]').boundingBox())!;
    const start = (await page.locator('[data-step=start]').boundingBox())!;
    const below = (dy: number) => ({ x: start.x - canvas.x + start.width / 2, y: start.y - canvas.y + dy });
    await dropStep(page, 'timer', below(200), 'morning');
    await dropStep(page, 'exit', below(400), 'done');
    await connect(page, 'start', 'next', 'morning');
    await connect(page, 'morning', 'next', 'done');
    await eventually(() => page.locator('.react-flow__edge').count()).toBe(2);

    await selectStep(page, 'morning');
    expect(await page.locator('[data-testid=cron-description]').textContent()).toBe('At 09:00 (UTC)');
    await page.locator('[data-testid=tz-mode]').selectOption('user');
    const attribute = page.locator('[data-testid=tz-attribute-input]');
    expect(await attribute.inputValue()).toBe('timezone');
    await eventually(() => page.locator('[data-testid=tz-attribute-input-hint]').textContent()).toBe('Read from profile.timezone (3 users have it)');
    expect(await page.locator('[data-testid=cron-description]').textContent()).toBe("At 09:00 (each user's timezone, else UTC)");

    await attribute.fill('profile.timezone');
    expect(await page.locator('[data-testid=tz-attribute-input-hint]').textContent()).toMatch(/without the `profile.` prefix/);
    await eventually(() => page.locator('[data-testid=inspector-problems]').textContent()).toMatch(/^Zone attribute: An attribute path is keys joined by dots/);
    await attribute.fill('timezone');

    const zone = page.locator('[data-testid=tz-input]');
    await zone.fill('Mars/Olympus');
    expect(await page.locator('[data-testid=tz-input-hint]').textContent()).toBe(
      '"Mars/Olympus" is not an IANA time zone; write e.g. "Europe/Amsterdam", "America/New_York" or "UTC"',
    );
    await eventually(() => page.locator('[data-testid=inspector-problems]').textContent()).toMatch(/^Time zone "Mars\/Olympus" is not an IANA time zone/);
    await zone.fill('Asia/Tokyo');
    await eventually(() => page.locator('[data-testid=inspector-problems]').count()).toBe(0);
    expect(await page.locator('[data-testid=cron-description]').textContent()).toBe("At 09:00 (each user's timezone, else Asia/Tokyo)");
    expect(await page.locator('[data-step=morning]').textContent()).toContain("each user's timezone, else Asia/Tokyo");
    await studio.shot('01-inspector');

    await page.click('[data-testid=save]');
    await eventually(() => page.locator('[data-testid=save-notice]').textContent()).toMatch(/^Saved version \d+\.$/);
    expect(await timerOf()).toEqual({ name: 'morning', kind: 'timer', cron: '0 0 9 * * *', tz: 'Asia/Tokyo', tzFromProfile: 'timezone', next: 'done' });
  });

  it('opens the saved timer as it was left, and switching back to one zone saves a plain timer', async () => {
    await page.reload();
    await page.locator('[data-step=morning]').waitFor();
    await selectStep(page, 'morning');
    expect(await page.locator('[data-testid=tz-mode]').inputValue()).toBe('user');
    expect(await page.locator('[data-testid=tz-attribute-input]').inputValue()).toBe('timezone');
    expect(await page.locator('[data-testid=tz-input]').inputValue()).toBe('Asia/Tokyo');
    await studio.shot('02-reopened');

    await page.locator('[data-testid=tz-mode]').selectOption('one');
    expect(await page.locator('[data-testid=tz-attribute-input]').count()).toBe(0);
    expect(await page.locator('[data-testid=cron-description]').textContent()).toBe('At 09:00 (Asia/Tokyo)');
    await page.click('[data-testid=save]');
    await eventually(() => page.locator('[data-testid=save-notice]').textContent()).toMatch(/^Saved version \d+\.$/);
    expect(await timerOf()).toEqual({ name: 'morning', kind: 'timer', cron: '0 0 9 * * *', tz: 'Asia/Tokyo', next: 'done' });
  });
});
