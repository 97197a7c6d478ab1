import { readFileSync } from 'node:fs';
import { DuckDBInstance } from '@duckdb/node-api';
import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { welcomeJourney, welcomeJourneyDraft } from '../../core/model/sample-workflows';
import { api, createTenant } from '../helpers/api';
import { waitFor } from '../helpers/wait-for';
import { eventually, useStudio } from './browser';

// The step menu's exports with profile columns (CSV or Parquet) and "Save as crowd" (issue 38 §1 and §3), used as a
// marketer does: keyboard and clicks on the running Welcome journey, the downloaded files opened and read.

let page: Page;
let tenant: { name: string; key: string };
const studio = useStudio('step-export');
const CROWD = [1, 2, 3, 4, 5, 6];
const focused = () => page.evaluate(() => document.activeElement?.getAttribute('aria-label') ?? document.activeElement?.textContent?.trim());

async function download(testId: string): Promise<{ name: string; path: string }> {
  const [file] = await Promise.all([page.waitForEvent('download'), page.click(`[data-step=welcome] [data-testid=${testId}]`)]);
  return { name: file.suggestedFilename(), path: (await file.path())! };
}

describe('step menu: columns, formats and step → crowd', () => {
  beforeAll(async () => {
    tenant = await createTenant(2);
    const base = `/tenants/${tenant.name}`;
    const profiles = CROWD.map((user) => ({ user, attributes: { plan: user % 2 ? 'pro' : 'free', age: 20 + user, city: 'Lyon' } }));
    expect((await api('POST', `${base}/profiles`, { token: tenant.key, body: profiles })).status).toBeLessThan(300);
    expect((await api('PUT', `${base}/crowds/launch`, { body: CROWD.join('\n'), headers: { 'content-type': 'text/plain' } })).status).toBe(201);
    const created = await api('POST', `${base}/workflows`, { body: { name: 'Welcome journey', definition: welcomeJourney, draft: welcomeJourneyDraft } });
    expect(created.status).toBe(201);
    expect((await api('POST', `${base}/workflows/${created.body.id}/start`, { body: { crowd: 'launch' } })).status).toBeLessThan(300);
    const instanceId: string = (await api('GET', `${base}/workflows/${created.body.id}`)).body.running.instanceId;
    const counts = () => api('GET', `${base}/instances/${instanceId}/counts`).then((answer) => answer.body);
    await waitFor('the crowd in the welcome step', counts, (body) => body.steps?.welcome === CROWD.length);
    page = await studio.open(`/t/${tenant.name}/workflows/${created.body.id}`);
  });

  it('exports the step with the columns and the format picked, as CSV with a header and as Parquet', async () => {
    await eventually(() => page.locator('[data-step=welcome] [data-testid=step-count]').getAttribute('data-count'), 20_000).toBe('6');
    await page.locator('[data-step=welcome] [data-testid=step-menu]').click();
    await page.getByRole('button', { name: 'Export with columns…' }).click();
    const form = page.locator('[data-testid=export-columns-form]');
    await eventually(() => form.getByRole('checkbox').count()).toBe(3);
    // the fields come as the server lists them (most users first, then by name): age, city, plan. Space ticks the
    // focused box, Tab goes to the next one.
    await form.getByRole('checkbox', { name: /^age/ }).focus();
    await page.keyboard.press('Space');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.closest('label')?.textContent)).toMatch(/^plan/);
    await page.keyboard.press('Space');
    await expect.poll(() => form.getByTestId('export-columns-download').textContent()).toBe('Download CSV with 2 columns');
    await studio.shot('01-columns-form');

    const csv = await download('export-columns-download');
    expect(csv.name).toMatch(/^welcome-journey-welcome-\d{4}-\d{2}-\d{2}\.csv$/);
    const lines = readFileSync(csv.path, 'utf8').trimEnd().split('\n');
    expect(lines).toEqual(['user,age,plan', ...CROWD.map((user) => `${user},${20 + user},${user % 2 ? 'pro' : 'free'}`)]);

    const format = form.getByLabel('Format');
    await format.focus();
    await format.selectOption('parquet');
    await expect.poll(() => form.getByTestId('export-columns-download').textContent()).toBe('Download Parquet with 2 columns');
    const parquet = await download('export-columns-download');
    expect(parquet.name).toMatch(/^welcome-journey-welcome-\d{4}-\d{2}-\d{2}\.parquet$/);
    const bytes = readFileSync(parquet.path);
    expect(bytes.subarray(0, 4).toString()).toBe('PAR1');
    const duck = await DuckDBInstance.create(':memory:');
    const connection = await duck.connect();
    const rows = (await connection.runAndReadAll(`SELECT * FROM read_parquet('${parquet.path}') ORDER BY "user"`)).getRowObjectsJS();
    connection.closeSync();
    duck.closeSync();
    expect(Object.keys(rows[0])).toEqual(['user', 'age', 'plan']);
    expect(rows.map((row) => [row.user, row.plan, row.age])).toEqual(CROWD.map((user) => [BigInt(user), user % 2 ? 'pro' : 'free', BigInt(20 + user)]));

    await page.keyboard.press('Escape');
    expect(await page.locator('[data-step=welcome] .step-menu-panel').count()).toBe(0);
    expect(await focused()).toBe('Menu of step welcome');
  });

  it('saves the step’s users as a new crowd, typed and sent with Enter, and says a taken name is taken', async () => {
    await page.keyboard.press('Enter'); // the focus is on the step's menu button
    await page.getByRole('button', { name: 'Save as crowd…' }).click();
    await page.getByLabel('New crowd name').focus();
    await page.keyboard.type('retarget-welcome');
    await page.keyboard.press('Enter');
    const status = page.locator('[data-step=welcome] [data-testid=save-crowd-status]');
    await eventually(() => status.textContent()).toBe('Saved crowd “retarget-welcome” with 6 users.');
    await studio.shot('02-saved-crowd');
    const exported = await api('GET', `/tenants/${tenant.name}/crowds/retarget-welcome/export?format=json`, { token: tenant.key });
    expect(exported.body).toEqual(CROWD);

    await page.keyboard.press('Enter'); // the same name again
    await eventually(() => page.locator('[data-step=welcome] [data-testid=save-crowd-form] [data-testid=error]').textContent()).toContain(
      'Crowd "retarget-welcome" already exists',
    );
    await studio.shot('03-crowd-name-taken');
    expect(await status.textContent()).toBe('');
    await page.keyboard.press('Escape');
    expect(await focused()).toBe('Menu of step welcome');
  });
});
