import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { welcomeJourney, welcomeJourneyDraft } from '../../core/model/sample-workflows';
import { api, createTenant } from '../helpers/api';
import { eventually, useStudio } from './browser';

// The procedures page in a marketer's words (issue 32 §3): each row says what was done to which journey and crowd,
// for how many users (or why it failed), with a link to the journey, not a type, ids and "Step 1 · 0 attempts".

let page: Page;
let tenant = '';
let workflowId = '';
const studio = useStudio('procedure-words');

describe('procedures in words', () => {
  beforeAll(async () => {
    tenant = (await createTenant(1)).name;
    const base = `/tenants/${tenant}`;
    expect((await api('PUT', `${base}/crowds/launch`, { body: '1\n2\n3\n4\n5\n6\n7\n8\n9\n10', headers: { 'content-type': 'text/plain' } })).status).toBe(201);
    const created = await api('POST', `${base}/workflows`, { body: { name: 'Welcome journey', definition: welcomeJourney, draft: welcomeJourneyDraft } });
    workflowId = created.body.id;
    const started = await api('POST', `${base}/workflows/${workflowId}/start`, { body: { crowd: 'launch' } });
    expect(started.status).toBeLessThan(300);
    page = await studio.open(`/t/${tenant}/procedures`);
  });

  it('says what each procedure did, to which journey and crowd, for how many users', async () => {
    const rows = page.getByTestId('procedure-row');
    await eventually(() => rows.first().textContent(), 20_000).toContain('Started with 10 users.');
    // The journey's name comes with the workflows' own query, which may answer after the procedures'.
    const start = rows.filter({ hasText: 'Start “Welcome journey” over crowd “launch”' });
    await eventually(() => start.count()).toBe(1);
    expect(await start.getByRole('link', { name: 'Welcome journey' }).getAttribute('href')).toBe(`/t/${tenant}/workflows/${workflowId}`);
    const table = (await page.getByTestId('procedure-table').textContent()) ?? '';
    expect(table).not.toMatch(/wf_|in_|attempt|instance\.start/);
    await studio.shot('01-list');

    // opened with the keyboard, it says the same, without a step counter for finished work
    await start.getByTestId('procedure-open').focus();
    await page.keyboard.press('Enter');
    const details = page.getByTestId('procedure-details');
    await eventually(() => details.locator('h2').textContent()).toMatch(/^Start “Welcome journey” over crowd “launch”/);
    expect(await page.getByTestId('procedure-outcome').textContent()).toBe('Started with 10 users.');
    expect(await details.locator('dl').textContent()).not.toContain('Step');
    expect(await details.locator('dl').textContent()).toContain('JourneyWelcome journey');
    await studio.shot('02-details');
  });
});
