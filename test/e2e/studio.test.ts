import { readFileSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { deserializeBitmap } from '../../server/crowd/bitmap';
import { api, createTenant } from '../helpers/api';
import { connect as connectOn, dropStep as dropStepOn, eventually, launch, shot as shotOf } from './browser';

// A marketer's day in the real studio, in Debian's Chromium against the real server (built by `next build`).
// The steps share one page and run in order; each asserts what the user sees.

const CROWD = Array.from({ length: 10 }, (_, i) => i + 1);

let browser: Browser;
let page: Page;
let tenant: { name: string; id: string; key: string };
let other: { name: string };
let workflowId: string;

const shot = (name: string) => shotOf(page, `studio-${name}`);
const dropStep = (kind: string, at: { x: number; y: number }, name: string) => dropStepOn(page, kind, at, name);
const connect = (from: string, handle: string, to: string) => connectOn(page, from, handle, to);

describe('studio end to end', () => {
  beforeAll(async () => {
    tenant = await createTenant(2);
    other = await createTenant(1);
    browser = await launch();
    const context = await browser.newContext({ baseURL: inject('baseUrl'), viewport: { width: 1440, height: 1000 }, acceptDownloads: true });
    page = await context.newPage();
  });

  afterAll(async () => {
    await browser?.close();
  });

  afterEach(async (context) => {
    if (context.task.result?.state === 'fail') await shot(`failed-${context.task.name.slice(0, 40).replace(/\W+/g, '-')}`);
  });

  it('refuses a wrong token with the server message, then signs in with the admin token', async () => {
    await page.goto('/');
    await page.waitForURL(/\/signin/);
    await page.fill('input[name=token]', 'not-the-admin-token');
    await page.click('button[type=submit]');
    await eventually(() => page.locator('[data-testid=error]').textContent()).toContain('not valid');
    await page.fill('input[name=token]', inject('adminToken'));
    await page.click('button[type=submit]');
    await page.waitForURL((url) => url.pathname === '/');
    await page.locator('[data-testid=tenant-link]', { hasText: tenant.name }).click();
    await page.waitForURL(`**/t/${tenant.name}`);
    expect(await page.locator('[data-testid=tenant-picker]').inputValue()).toBe(tenant.name);
    await page.getByText('No workflows yet').waitFor();
    await shot('01-workflows-empty');
  });

  it('builds a workflow from scratch on the canvas with a rule-builder condition', async () => {
    await page.getByLabel('New workflow name').fill('Buyers journey');
    await page.getByRole('button', { name: 'New workflow' }).click();
    await page.waitForURL(/\/workflows\/wf_/);
    workflowId = page.url().split('/').pop()!;
    await page.locator('[data-step=start]').waitFor();
    const canvas = (await page.locator('[data-testid=canvas]').boundingBox())!;
    // pan the lone entry step up to make room below it
    await page.mouse.move(canvas.x + 60, canvas.y + canvas.height - 60);
    await page.mouse.down();
    await page.mouse.move(canvas.x + 60, canvas.y + canvas.height - 360, { steps: 8 });
    await page.mouse.up();
    const start = (await page.locator('[data-step=start]').boundingBox())!;
    const centerX = start.x - canvas.x + start.width / 2;
    const top = start.y - canvas.y;

    await dropStep('branch', { x: centerX, y: top + 200 }, 'choose');
    // the condition of the first branch, written with the rule builder
    const firstBranch = page.locator('[data-testid=branch-0]');
    await firstBranch.locator('.rule-remove').first().click();
    await firstBranch.locator('.ruleGroup-addRule').click();
    await firstBranch.locator('[data-testid=rule-field]').fill('event.type');
    await firstBranch.locator('.rule-operators').selectOption('=');
    await firstBranch.locator('.rule-value').fill('buy');
    await eventually(() => firstBranch.locator('[data-testid=cel-preview]').textContent()).toBe('event.type == "buy"');

    await dropStep('exit', { x: centerX - 200, y: top + 460 }, 'bought');
    await dropStep('exit', { x: centerX + 200, y: top + 460 }, 'other');
    await connect('start', 'next', 'choose');
    await connect('choose', 'branch-0', 'bought');
    await eventually(() => page.locator('.react-flow__edge').count()).toBe(2);
    await shot('02-canvas-built');
  });

  it('edits conditions as raw CEL with live parse errors, and back in the rule builder', async () => {
    await page.locator('[data-step=choose]').click({ position: { x: 60, y: 14 } });
    const firstBranch = page.locator('[data-testid=branch-0]');
    await firstBranch.getByRole('tab', { name: 'CEL' }).click();
    const cel = firstBranch.locator('[data-testid=cel-input]');
    expect(await cel.inputValue()).toBe('event.type == "buy"');
    await cel.fill('event.type == ');
    await firstBranch.locator('[data-testid=cel-error]').waitFor();
    await cel.fill('event.type == "buy"');
    await firstBranch.locator('[data-testid=cel-error]').waitFor({ state: 'detached' });
    await firstBranch.getByRole('tab', { name: 'Rules' }).click();
    expect(await firstBranch.locator('.rule-value').inputValue()).toBe('buy');
  });

  it('adds a connected step from "+", copies and pastes, and undoes and redoes with the keyboard', async () => {
    const steps = page.locator('[data-testid=step-node]');
    await page.locator('[data-step=choose] [data-testid=add-after-branch-1]').click();
    await page.getByRole('menuitem', { name: '◷ Timer' }).click();
    await eventually(() => steps.count()).toBe(5);
    await eventually(() => page.locator('.react-flow__edge').count()).toBe(3);
    // the new step is selected; its cron reads as words
    expect(await page.locator('[data-testid=cron-description]').textContent()).toBe('At 09:00 (UTC)');
    expect(await page.locator('[data-step=timer] .step-summary').textContent()).toBe('At 09:00 (UTC)');
    await page.locator('.react-flow__pane').click({ position: { x: 20, y: 20 } });
    await page.keyboard.press('ControlOrMeta+z');
    await eventually(() => steps.count()).toBe(4);
    await page.keyboard.press('ControlOrMeta+Shift+z');
    await eventually(() => steps.count()).toBe(5);
    await page.keyboard.press('ControlOrMeta+z');
    await eventually(() => steps.count()).toBe(4);
    // the new step was brought into view; show the whole journey again
    await page.locator('.react-flow__controls-fitview').click();

    await page.locator('[data-step=bought]').click({ position: { x: 60, y: 14 } });
    await page.keyboard.press('ControlOrMeta+c');
    await page.keyboard.press('ControlOrMeta+v');
    await page.locator('[data-step=bought_copy]').waitFor();
    await page.keyboard.press('Delete');
    await eventually(() => page.locator('[data-step=bought_copy]').count()).toBe(0);
    expect(await steps.count()).toBe(4);
    await page.locator('.react-flow__controls-fitview').click();
  });

  it('marks a validation problem on its step, and saves once it is fixed', async () => {
    // the problem is on the step before any save: every edit is validated
    const problems = page.locator('[data-step=choose] [data-testid=step-problems]');
    await problems.waitFor();
    expect(await problems.textContent()).toBe('Connect output “else” to the step users go to next');
    await page.click('[data-testid=save]');
    expect(await page.locator('[data-testid=save-notice]').textContent()).toBe('Not saved: fix the problems marked on the steps.');
    expect(await page.locator('[data-step=bought] [data-testid=step-problems]').count()).toBe(0);
    await shot('03-validation-problem');

    await connect('choose', 'branch-1', 'other');
    await page.click('[data-testid=save]');
    await eventually(() => page.locator('[data-testid=save-notice]').textContent()).toBe('Saved version 2.');
    expect(await page.locator('[data-testid=step-problems]').count()).toBe(0);

    const saved = await api('GET', `/tenants/${tenant.name}/workflows/${workflowId}`);
    expect(saved.body.definition).toEqual({
      steps: [
        { name: 'start', kind: 'direct', next: 'choose' },
        {
          name: 'choose',
          kind: 'branch',
          branches: [
            { condition: 'event.type == "buy"', next: 'bought' },
            { condition: 'true', next: 'other' },
          ],
        },
        { name: 'bought', kind: 'direct' },
        { name: 'other', kind: 'direct' },
      ],
    });
    expect(Object.keys(saved.body.draft.positions).sort()).toEqual(['bought', 'choose', 'other', 'start']);
    await shot('04-saved');
  });

  it('uploads a crowd file with progress and shows its count', async () => {
    await page.click('nav >> text=Crowds');
    await page.waitForURL(/\/crowds$/);
    await page.setInputFiles('[data-testid=crowd-file]', { name: 'buyers.txt', mimeType: 'text/plain', buffer: Buffer.from(CROWD.join('\n')) });
    expect(await page.locator('[data-testid=crowd-name]').inputValue()).toBe('buyers');
    await page.click('[data-testid=upload]');
    await eventually(() => page.locator('[data-testid=upload-result]').textContent()).toContain('10 users');
    await eventually(() => page.locator('[data-crowd=buyers] [data-testid=crowd-row-count]').textContent()).toBe('10');
    await shot('05-crowd-uploaded');
  });

  it('starts the workflow on the crowd and shows live counts on the nodes as events arrive', async () => {
    await page.goto(`/t/${tenant.name}/workflows/${workflowId}`);
    await page.click('[data-testid=start]');
    await page.locator('[data-testid=crowd-select]').selectOption('buyers');
    expect(await page.locator('[data-testid=crowd-count]').textContent()).toBe('10 users in this crowd');
    await page.click('[data-testid=start-confirm]');
    await eventually(() => page.locator('[data-testid=start-result]').textContent(), 20_000).toContain('Started with 10 users');
    await page.click('[data-testid=start-dialog] >> text=Close');
    const count = (step: string) => page.locator(`[data-step="${step}"] [data-testid=step-count]`).getAttribute('data-count');
    await eventually(() => count('choose'), 10_000).toBe('10');
    expect(await page.locator('[data-step=choose] [data-testid=step-count]').textContent()).toBe('10 · 100%');
    await shot('06-started');

    const events = [1, 2, 3].map((user) => ({ user, type: 'buy' })).concat([4, 5].map((user) => ({ user, type: 'browse' })));
    const sent = await api('POST', '/events', { token: tenant.key, body: { events } });
    expect(sent.body).toEqual({ accepted: 5 });
    await eventually(() => count('bought'), 5_000).toBe('3');
    await eventually(() => count('other'), 5_000).toBe('2');
    await eventually(() => count('choose'), 5_000).toBe('5');
    expect(await page.locator('[data-step=bought] [data-testid=step-count]').textContent()).toBe('3 · 30%');
    // start→choose carried all 10, choose→bought 3, choose→other 2
    await eventually(() =>
      page
        .locator('[data-testid=edge-count]')
        .allTextContents()
        .then((t) => t.map(Number).sort((a, b) => a - b)),
    ).toEqual([2, 3, 10]);
    await shot('07-live-counts');
  });

  it('exports the users of a step and they are exactly the users who took that path', async () => {
    await page.locator('[data-step=bought] [data-testid=step-menu]').click();
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('[data-step=bought] [data-testid=export-csv]')]);
    const ids = readFileSync((await download.path())!, 'utf8')
      .trim()
      .split('\n')
      .map(Number);
    expect(ids).toEqual([1, 2, 3]);
    const [roaring] = await Promise.all([page.waitForEvent('download'), page.click('[data-step=bought] [data-testid=export-roaring]')]);
    expect(deserializeBitmap(readFileSync((await roaring.path())!)).toArray()).toEqual([1, 2, 3]);
    await page.locator('[data-step=bought] >> text=View first users').click();
    expect(await page.locator('[data-step=bought] [data-testid=first-users]').textContent()).toBe('1, 2, 3');
    await page.locator('[data-step=bought] input[aria-label="User ID"]').click();
    await page.keyboard.type('4');
    await page.locator('[data-step=bought] button', { hasText: 'Find' }).click();
    expect(await page.locator('[data-step=bought] [data-testid=where-user]').textContent()).toContain('In this instance: user 4 is in “other”');
    await shot('08-step-menu');
    // Escape closes the menu and gives the focus back to the button that opened it
    await page.keyboard.press('Escape');
    expect(await page.locator('[data-step=bought] .step-menu-panel').count()).toBe(0);
    expect(await page.evaluate(() => document.activeElement?.getAttribute('aria-label'))).toBe('Menu of step bought');
  });

  it('edits the running workflow: users of a removed step are mapped in the dialog', async () => {
    await page.keyboard.press('Escape');
    await page.locator('[data-step=other]').click({ position: { x: 60, y: 14 } });
    await page.click('[data-testid=inspector] >> text=Delete step');
    // "other" holds 2 users: the studio asks first
    await page.click('[data-testid=delete-confirm]');
    await eventually(() => page.locator('[data-step=other]').count()).toBe(0);
    await connect('choose', 'branch-1', 'bought');
    await page.click('[data-testid=save]');
    await eventually(() => page.locator('[data-testid=save-notice]').textContent()).toBe('Saved version 3.');
    await page.locator('[data-testid=apply-version]').click({ timeout: 15_000 });
    await page.click('[data-testid=apply-confirm]');
    const stranded = page.locator('[data-testid=apply-dialog] label', { hasText: 'removed step “other”' });
    expect(await stranded.textContent()).toContain('2 users in removed step “other” move to');
    await stranded.locator('select').selectOption('bought');
    await shot('09-map-removed-step');
    expect(await page.locator('[data-testid=apply-confirm]').textContent()).toBe('Apply with this mapping');
    await page.click('[data-testid=apply-confirm]');
    await page.locator('[data-testid=apply-dialog]').waitFor({ state: 'detached', timeout: 20_000 });
    expect(await page.locator('[data-testid=apply-notice]').textContent()).toBe(
      'v3 now runs (was v2): users stayed in their steps; 2 from “other” moved to “bought”.',
    );
    const count = (step: string) => page.locator(`[data-step="${step}"] [data-testid=step-count]`).getAttribute('data-count');
    await eventually(() => count('bought'), 10_000).toBe('5');
    expect(await count('choose')).toBe('5');
    await page.locator('[data-testid=apply-version]').waitFor({ state: 'detached' });
  });

  it('updates the crowd of the running instance: new users enter at the entry step', async () => {
    const bigger = await api('PUT', `/tenants/${tenant.name}/crowds/buyers_plus`, {
      body: [...CROWD, 11, 12].join('\n'),
      headers: { 'content-type': 'text/plain' },
    });
    expect(bigger.status).toBe(201);
    await page.click('text=Update crowd');
    await page.locator('[data-testid=crowd-select]').selectOption('buyers_plus');
    await page.click('[data-testid=update-crowd-confirm]');
    const count = (step: string) => page.locator(`[data-step="${step}"] [data-testid=step-count]`).getAttribute('data-count');
    // 11 and 12 enter at start, a direct step, and move on to choose at once
    await eventually(() => count('choose'), 20_000).toBe('7');
    expect(await count('bought')).toBe('5');
    await eventually(() => page.locator('[data-testid=running-badge]').textContent()).toBe('running v3 · 12 users');
  });

  it('lists the procedures that ran, live', async () => {
    await page.click('nav >> text=Procedures');
    const rows = page.locator('[data-testid=procedure-row]');
    await eventually(() => rows.count(), 15_000).toBeGreaterThanOrEqual(2);
    const texts = await rows.allTextContents();
    expect(texts.some((t) => t.startsWith('Start “') && t.includes('done'))).toBe(true);
    // a procedure opens with its committed steps
    await rows.filter({ hasText: 'start' }).first().locator('[data-testid=procedure-open]').click();
    await page.locator('[data-testid=procedure-steps] li').first().waitFor();
    expect(await page.locator('[data-testid=procedure-details] h2').textContent()).toMatch(/^Start /);
    await shot('10-procedures');
    await page.goBack();
  });

  it('stops the instance and shows its snapshot counts in the history view', async () => {
    await page.goto(`/t/${tenant.name}/workflows/${workflowId}`);
    page.once('dialog', (dialog) => void dialog.accept());
    await page.click('[data-testid=stop]');
    await page.locator('[data-testid=start]').waitFor({ timeout: 20_000 });
    await page.click('text=History');
    await page.locator('[data-testid=history-item]').first().click();
    const count = (step: string) => page.locator(`[data-step="${step}"] [data-testid=step-count]`).getAttribute('data-count');
    await eventually(() => count('bought')).toBe('5');
    expect(await count('choose')).toBe('7');
    expect(await page.locator('[data-step]').count()).toBe(3);
    await shot('11-history');
    await page.click('text=Back to the editor');
  });

  it('browses the saved versions: opens one read-only and compares two step by step', async () => {
    await page.click('[data-testid=versions]');
    await eventually(() => page.locator('[data-testid=version-item]').count()).toBe(3);
    await page.locator('[data-testid=compare-left]').selectOption('2');
    await page.locator('[data-testid=compare-right]').selectOption('3');
    await page.click('[data-testid=compare]');
    const changes = page.locator('[data-testid=change]');
    await eventually(() => changes.allTextContents()).toEqual(['choose changedElse goes to: other → bought', 'other removedExit step']);
    await shot('12-compare-versions');
    await page.click('[data-testid=open-v2]');
    await eventually(() => page.locator('[data-testid=history-badge]').textContent()).toBe('version 2, read-only');
    expect(await page.locator('[data-step]').count()).toBe(4);
    expect(await page.locator('[data-testid=palette-direct]').count()).toBe(0);
    await page.click('text=Back to the editor');
    expect(await page.locator('[data-step]').count()).toBe(3);
  });

  it('lists workflows with version and state, duplicates and deletes, and switches tenants in the header', async () => {
    await page.click('nav >> text=Workflows');
    const byName = (name: string) => page.locator('[data-testid=workflow-row]').filter({ has: page.getByRole('link', { name, exact: true }) });
    const original = byName('Buyers journey');
    await eventually(() => original.textContent(), 10_000).toContain('v3');
    expect(await original.textContent()).toContain('idle');
    await original.getByRole('button', { name: 'Duplicate' }).click();
    const copy = byName('Buyers journey (copy)');
    await copy.waitFor();
    expect(await copy.textContent()).toContain('v1');
    page.once('dialog', (dialog) => void dialog.accept());
    await copy.getByRole('button', { name: 'Delete' }).click();
    await copy.waitFor({ state: 'detached' });
    await shot('13-workflow-list');

    await page.locator('[data-testid=tenant-picker]').selectOption(other.name);
    await page.waitForURL(`**/t/${other.name}`);
    await page.getByText('No workflows yet').waitFor();
    await page.locator('[data-testid=tenant-picker]').selectOption(tenant.name);
    await original.waitFor();
  });

  it('combines crowds and offers their exports', async () => {
    await page.click('nav >> text=Crowds');
    const combine = page.locator('[data-testid=combine-form]');
    await combine.locator('select').first().selectOption('intersection');
    await combine.locator('select[multiple]').selectOption(['buyers', 'buyers_plus']);
    await combine.locator('input').fill('both');
    await combine.getByRole('button', { name: 'Combine' }).click();
    await eventually(() => combine.locator('.ok-text').textContent()).toBe('Crowd “both”: 10 users');
    await eventually(() => page.locator('[data-crowd=both] [data-testid=crowd-row-count]').textContent()).toBe('10');
    const [download] = await Promise.all([page.waitForEvent('download'), page.locator('[data-crowd=both]').getByRole('link', { name: 'CSV' }).click()]);
    expect(
      readFileSync((await download.path())!, 'utf8')
        .trim()
        .split('\n')
        .map(Number),
    ).toEqual(CROWD);
    await shot('14-crowds');
  });

  it('signs out, and the studio then asks for the token again', async () => {
    await page.click('text=Sign out');
    await page.waitForURL(/\/signin/);
    await page.goto(`/t/${tenant.name}/crowds`);
    await page.waitForURL(/\/signin/);
  });
});
