import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { PART_BYTES } from '../../studio/profile-import';
import { api, createTenant } from '../helpers/api';
import { eventually, seriousViolations, useStudio } from './browser';

// The Profiles page in Chromium, as a marketer uses it: import files bigger than one request part (NDJSON and CSV,
// so the cut at line ends and the repeated CSV header are exercised), read what the index holds, look up a user,
// and get a failed line named by its line number in the file, with exactly what was imported before it.

let page: Page;
let tenant: { name: string };

const studio = useStudio('profiles');
const shot = studio.shot;
const PLANS = ['free', 'pro', 'team'];

/** `count` NDJSON profiles: plan by user % 3, age 18 + user % 60, nested country. */
function ndjson(count: number): Buffer {
  const lines: string[] = [];
  for (let user = 0; user < count; user++)
    lines.push(JSON.stringify({ user, attributes: { plan: PLANS[user % 3], age: 18 + (user % 60), address: { country: user % 4 === 0 ? 'NL' : 'BE' } } }));
  return Buffer.from(`${lines.join('\n')}\n`);
}

/** CSV rows from user `from`; the row of `badUser` has an age that is not a number. */
function csv(from: number, count: number, badUser = -1): Buffer {
  const rows = ['user,email,score'];
  for (let user = from; user < from + count; user++) rows.push(`${user},user${user}@example.com,${user === badUser ? 'abc' : user % 100}`);
  return Buffer.from(`${rows.join('\r\n')}\r\n`);
}

async function importFile(name: string, buffer: Buffer, types = '') {
  await page.setInputFiles('[data-testid=profile-file]', { name, mimeType: name.endsWith('.csv') ? 'text/csv' : 'application/x-ndjson', buffer });
  if (types) await page.fill('[data-testid=profile-types]', types);
  await page.click('[data-testid=profile-import-start]');
}

describe('the Profiles page', () => {
  beforeAll(async () => {
    tenant = await createTenant(2);
    page = await studio.open();
  });

  it('is in the navigation and says there are no profiles yet', async () => {
    await page.goto(`/t/${tenant.name}`);
    await page.getByRole('link', { name: 'Profiles' }).click();
    await page.waitForURL(`**/t/${tenant.name}/profiles`);
    await eventually(() => page.locator('[data-testid=profile-fields]').textContent()).toContain('No profiles yet');
    expect(await seriousViolations(page)).toEqual([]);
    await shot('01-empty');
  });

  it('imports an NDJSON file in several parts with progress, then lists the attributes with types, users and top values', async () => {
    const file = ndjson(45_000);
    expect(file.length).toBeGreaterThan(PART_BYTES); // two requests at least
    await importFile('customers.ndjson', file);
    await eventually(() => page.locator('[data-testid=profile-import-result]').textContent(), 60_000).toContain('Imported 45,000 lines (45,000 new profiles)');
    expect(await page.locator('[data-testid=profile-lines-imported]').textContent()).toBe('45,000');
    expect(await page.getByRole('progressbar', { name: 'Bytes sent' }).getAttribute('aria-valuenow')).toBe('100');
    await shot('02-imported');

    await eventually(() => page.locator('[data-testid=profile-count]').textContent()).toContain('45,000 profiles');
    const row = (field: string) => page.locator(`[data-testid=profile-field][data-field="${field}"]`);
    expect(await row('plan').locator('[data-testid=profile-field-type]').textContent()).toBe('string');
    expect(await row('plan').locator('[data-testid=profile-field-users]').textContent()).toBe('45,000');
    expect(await row('plan').locator('[data-testid=profile-top-value]').allTextContents()).toEqual(['free 15,000', 'pro 15,000', 'team 15,000']);
    expect(await row('age').locator('[data-testid=profile-field-type]').textContent()).toBe('number');
    expect(await row('age').textContent()).toContain('ranges are bitmap operations');
    expect(await row('address.country').locator('[data-testid=profile-top-value]').allTextContents()).toEqual(['BE 33,750', 'NL 11,250']);
    await shot('03-fields');
  });

  it('looks up one user (the last line of the file, in its last part) and says when a user has no profile', async () => {
    await page.fill('[data-testid=profile-user]', '44999');
    await page.click('[data-testid=profile-find]');
    const attribute = (path: string) => page.locator(`[data-testid=profile-attribute][data-path="${path}"] dd`);
    await eventually(() => attribute('plan').textContent()).toBe('"team"');
    expect(await attribute('age').textContent()).toBe(String(18 + (44_999 % 60)));
    expect(await attribute('address.country').textContent()).toBe('"BE"');
    await shot('04-lookup');
    await page.fill('[data-testid=profile-user]', '45000');
    await page.click('[data-testid=profile-find]');
    await eventually(() => page.locator('[data-testid=profile-lookup] [data-testid=error]').textContent()).toContain('User 45000 has no profile');
  });

  it('imports a CSV in several parts (the header goes with each) and names a bad line by its line in the file, with what was imported before it', async () => {
    const good = csv(100_000, 80_000);
    expect(good.length).toBeGreaterThan(PART_BYTES);
    await importFile('scores.csv', good, 'score:number');
    await eventually(() => page.locator('[data-testid=profile-import-result]').textContent(), 60_000).toContain('Imported 80,000 lines (80,000 new profiles)');
    const score = await api('GET', `/tenants/${tenant.name}/profiles/179999`);
    expect(score.body.attributes).toEqual({ email: 'user179999@example.com', score: 99 });

    // line 1 is the header: user 300,000 + k is on line k + 2; the bad one is in the second part
    const badUser = 300_000 + 75_000;
    await importFile('broken.csv', csv(300_000, 80_000, badUser), 'score:number');
    const error = page.locator('[data-testid=profile-import] [data-testid=error]');
    await eventually(() => error.textContent(), 60_000).toContain('Line 75,002: column "score" must be a number, got "abc"');
    const imported = Number((await error.textContent())?.match(/first ([\d,]+) lines were imported/)?.[1].replaceAll(',', ''));
    expect(imported).toBeGreaterThan(0);
    expect(imported).toBeLessThan(75_000);
    expect(await page.locator('[data-testid=profile-lines-imported]').textContent()).toBe(imported.toLocaleString('en-US'));
    await shot('05-bad-line');
    // exactly the file's first `imported` lines are in: the one after them is not
    expect((await api('GET', `/tenants/${tenant.name}/profiles/${300_000 + imported - 1}`)).status).toBe(200);
    expect((await api('GET', `/tenants/${tenant.name}/profiles/${300_000 + imported}`)).status).toBe(404);
    await eventually(() => page.locator('[data-testid=profile-count]').textContent()).toContain(`${(125_000 + imported).toLocaleString('en-US')} profiles`);
  });
});
