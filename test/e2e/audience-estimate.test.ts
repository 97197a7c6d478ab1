import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { RoaringBitmap32 } from '../../server/crowd/bitmap';
import { api, createTenant } from '../helpers/api';
import { eventually, openWelcomeJourney, selectStep, useStudio } from './browser';

// Issue 34 item 4 and issue 32 §2 in the inspector: the audience under a condition says "exactly N" or "≈ N (low–high)",
// and while a new estimate is computed the old figure stays, marked as updating.

let page: Page;
let tenant: { name: string; key: string };

const studio = useStudio('audience-estimate');
const shot = studio.shot;
const USERS = 1_000;
const BIG = 300_000;

/** Replaces the CEL text of the selected step's condition by typing, as a person does. */
async function typeCondition(text: string) {
  await page.locator('[data-testid=cel-input]').click();
  await page.keyboard.press('ControlOrMeta+A');
  await page.keyboard.type(text);
}

describe('the audience estimate in the inspector', () => {
  beforeAll(async () => {
    tenant = await createTenant(2);
    const lines = Array.from({ length: USERS }, (_, user) => JSON.stringify({ user, attributes: { plan: ['free', 'pro', 'team'][user % 3] } })).join('\n');
    const imported = await api('POST', `/tenants/${tenant.name}/profiles/import`, { body: lines, headers: { 'content-type': 'application/x-ndjson' } });
    expect(imported.status, JSON.stringify(imported.body)).toBe(200);
    const big = new RoaringBitmap32();
    big.addRange(0, BIG);
    const upload = await api('PUT', `/tenants/${tenant.name}/crowds/big`, {
      body: big.serialize('portable'),
      headers: { 'content-type': 'application/octet-stream' },
    });
    expect(upload.status, JSON.stringify(upload.body)).toBeLessThan(300);
    page = await studio.open();
    await openWelcomeJourney(page, tenant.name);
  });

  it('says "exactly" for a user range, keeps the old figure marked as updating, then shows a sampled estimate with its interval', async () => {
    await selectStep(page, 'nurture');
    await page.getByRole('tab', { name: 'CEL' }).click();
    await typeCondition('profile.plan == "pro" && user >= 1 && user <= 300');
    const audience = page.locator('[data-testid=audience]');
    // users 1, 4, … 298 are pro: a bitmap plan over a range of user IDs, no sampling
    await eventually(() => audience.textContent()).toBe(`exactly 100 users match now (of ${USERS.toLocaleString('en-US')})`);
    expect(await audience.getAttribute('aria-busy')).toBe('false');
    await shot('01-exact');

    // The next answer is held back, so what the inspector shows meanwhile can be looked at.
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    await page.route('**/api/v1/tenants/*/audience', async (route) => {
      await held;
      await route.continue();
    });
    await typeCondition('inCrowd("big") && user % 7 == 0');
    await eventually(() => audience.getAttribute('aria-busy')).toBe('true');
    expect(await audience.textContent()).toBe(`exactly 100 users match now (of ${USERS.toLocaleString('en-US')}) · updating…`);
    await shot('02-updating');

    release();
    // 300,000 users to look at one by one is more than one request evaluates: a random 100,000 of them, and an interval
    const estimate = /^≈ ([\d,]+) \(([\d,]+)–([\d,]+)\) users match now \(of 300,000; estimated from 100,000 users\)$/;
    await eventually(() => audience.textContent(), 20_000).toMatch(estimate);
    const [count, low, high] = estimate
      .exec((await audience.textContent())!)!
      .slice(1)
      .map((n) => Number(n.replace(/,/g, '')));
    const truth = Math.ceil(BIG / 7); // 0, 7, … 299,999
    // A 95% interval misses the truth in one run of twenty by design (it failed so once): whether it holds 95% of the
    // time is the seeded unit test's to show (audience-estimates). Here: the estimate is near the truth (within two
    // interval widths, about four standard errors) and the interval shown is around it.
    expect(Math.abs(count - truth)).toBeLessThanOrEqual(2 * (high - low));
    expect(low).toBeLessThanOrEqual(count);
    expect(high).toBeGreaterThanOrEqual(count);
    expect(high - low).toBeLessThan(2_000); // ±0.22% of 300,000 at a share of 1/7
    expect(await audience.getAttribute('aria-busy')).toBe('false');
    expect(await audience.locator('span[title]').getAttribute('title')).toBe('The true count lies in this range with 95% confidence');
    await page.unroute('**/api/v1/tenants/*/audience');
    await shot('03-estimate');
  });
});
