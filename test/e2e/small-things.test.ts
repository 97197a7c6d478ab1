import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { welcomeJourney, welcomeJourneyDraft } from '../../core/model/sample-workflows';
import { api, createTenant } from '../helpers/api';
import { clickStepHeader, eventually, launch, openPage, seriousViolations, shot as shotOf, signIn } from './browser';

// The small things that read as bugs, on the smaller laptop screen (1280×720).

let browser: Browser;
let page: Page;
let tenant: { name: string };

const shot = (name: string) => shotOf(page, `small-${name}`);

describe('the small things, at 1280×720', () => {
  beforeAll(async () => {
    tenant = await createTenant(1);
    browser = await launch();
    page = await openPage(browser, { width: 1280, height: 720 });
  });

  afterAll(async () => {
    await browser?.close();
  });

  afterEach(async (context) => {
    if (context.task.result?.state === 'fail') await shot(`failed-${context.task.name.slice(0, 40).replace(/\W+/g, '-')}`);
  });

  it('says on the sign-in page where the admin token is', async () => {
    await page.goto('/signin');
    expect(await page.locator('[data-testid=token-hint]').textContent()).toContain('.env');
    await shot('01-signin');
    await signIn(page);
  });

  it('labels the new-workflow box', async () => {
    await page.goto(`/t/${tenant.name}`);
    await page.getByLabel('New workflow name').fill('Label check');
    await shot('02-workflows');
  });

  it('names a crowd after the new file when an upload failed, and points at "Replace if it exists" for a taken name', async () => {
    await page.goto(`/t/${tenant.name}/crowds`);
    const name = page.locator('[data-testid=crowd-name]');
    await page.setInputFiles('[data-testid=crowd-file]', { name: 'garbage.txt', mimeType: 'text/plain', buffer: Buffer.from('1\n2\nbanana\n') });
    expect(await name.inputValue()).toBe('garbage');
    await page.click('[data-testid=upload]');
    await page.locator('[data-testid=upload-form] [data-testid=error]').waitFor();
    await page.setInputFiles('[data-testid=crowd-file]', { name: 'vip-users.txt', mimeType: 'text/plain', buffer: Buffer.from('1\n2\n3\n') });
    expect(await name.inputValue()).toBe('vip-users');
    expect(await page.locator('[data-testid=upload-form] [data-testid=error]').count()).toBe(0);
    await page.click('[data-testid=upload]');
    await eventually(() => page.locator('[data-testid=upload-result]').textContent()).toContain('3 users');

    // the same name again: the error says what to do in this form, not "use PUT"
    await page.setInputFiles('[data-testid=crowd-file]', { name: 'vip-users.txt', mimeType: 'text/plain', buffer: Buffer.from('4\n5\n') });
    await page.click('[data-testid=upload]');
    const error = page.locator('[data-testid=upload-form] [data-testid=error]');
    await eventually(() => error.textContent()).toContain('Tick “Replace if it exists” to overwrite it');
    await shot('03-crowd-exists');
    await page.check('[data-testid=crowd-replace]');
    await page.click('[data-testid=upload]');
    await eventually(() => page.locator('[data-testid=upload-result]').textContent()).toContain('2 users');
  });

  it('has no serious accessibility violations (axe-core) on the list pages and in the editor', async () => {
    const created = await api('POST', `/tenants/${tenant.name}/workflows`, {
      body: { name: 'Welcome journey', definition: welcomeJourney, draft: welcomeJourneyDraft },
    });
    const found: Record<string, string[]> = {};
    for (const path of ['', '/crowds', '/procedures', `/workflows/${created.body.id}`]) {
      await page.goto(`/t/${tenant.name}${path}`);
      await page.locator(path.startsWith('/workflows') ? '[data-step=welcome]' : 'h1').waitFor();
      if (path.startsWith('/workflows')) await clickStepHeader(page, 'welcome');
      found[path || '/'] = await seriousViolations(page);
    }
    expect(found).toEqual({ '/': [], '/crowds': [], '/procedures': [], [`/workflows/${created.body.id}`]: [] });
  });

  it('follows the system dark mode', async () => {
    const dark = await openPage(browser, { width: 1280, height: 720 }, 'dark');
    await signIn(dark);
    const workflows = await api('GET', `/tenants/${tenant.name}/workflows`);
    await dark.goto(`/t/${tenant.name}/workflows/${workflows.body.workflows[0].id}`);
    await dark.locator('[data-step=welcome]').waitFor();
    const background = await dark.evaluate(() => getComputedStyle(document.body).backgroundColor);
    expect(background).toBe('rgb(18, 21, 29)');
    await dark.screenshot({ path: 'test-results/small-04-dark-editor.png' });
    await dark.context().close();
  });
});
