import type { Locator, Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { api, createTenant } from '../helpers/api';
import { eventually, openWelcomeJourney, selectStep, useStudio } from './browser';

// A marketer edits the demo journey: writes rules by typing, sees problems come and go as they edit,
// adds steps that never stack, reads which edge is which, and loses nothing by navigating away.

let page: Page;
let tenant: { name: string; id: string; key: string };
let other: { name: string };

const studio = useStudio('editing');
const shot = studio.shot;
const boxes = async () => {
  const names = await page.locator('[data-testid=step-node]').evaluateAll((nodes) => nodes.map((n) => n.getAttribute('data-step')!));
  return Promise.all(names.map(async (name) => ({ name, box: (await page.locator(`[data-step="${name}"]`).boundingBox())! })));
};
/** Pairs of steps drawn on top of each other (screen boxes intersecting). */
async function overlapping(): Promise<string[]> {
  const all = await boxes();
  const pairs: string[] = [];
  for (let i = 0; i < all.length; i++) {
    for (let j = i + 1; j < all.length; j++) {
      const [a, b] = [all[i].box, all[j].box];
      if (a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height) pairs.push(`${all[i].name}/${all[j].name}`);
    }
  }
  return pairs;
}
const problemsOf = (step: string) => page.locator(`[data-step="${step}"] [data-testid=step-problems]`);

async function typeInto(input: Locator, text: string) {
  await input.fill('');
  await input.pressSequentially(text, { delay: 15 });
}

describe('editing a workflow as a marketer', () => {
  beforeAll(async () => {
    tenant = await createTenant(2);
    other = await createTenant(1);
    for (const crowd of ['vip', 'engaged']) {
      const put = await api('PUT', `/tenants/${tenant.name}/crowds/${crowd}`, { body: '1\n2\n3', headers: { 'content-type': 'text/plain' } });
      expect(put.status).toBe(201);
    }
    page = await studio.open();
    await openWelcomeJourney(page, tenant.name);
  });

  it('shows the step labels of the draft on the canvas and edits them in the inspector', async () => {
    expect(await page.locator('[data-step=welcome] [data-testid=step-label]').textContent()).toBe('Signed up: what do they do first?');
    await selectStep(page, 'ab_test');
    await typeInto(page.locator('[data-testid=step-label-input]'), 'Which offer works better?');
    await eventually(() => page.locator('[data-step=ab_test] [data-testid=step-label]').textContent()).toBe('Which offer works better?');
    await page.locator('[data-testid=step-note-input]').fill('Ask Sam before changing the split');
    await eventually(() => page.locator('[data-step=ab_test] [data-testid=step-note]').getAttribute('title')).toBe('Ask Sam before changing the split');
    await shot('01-labels');
  });

  it('types profile.plan into the rule builder key by key without being thrown into CEL', async () => {
    await selectStep(page, 'welcome');
    const branch = page.locator('[data-testid=branch-0]');
    await branch.locator('.ruleGroup-addRule').click();
    const field = branch.locator('[data-testid=rule-field]').last();
    await typeInto(field, 'profile.plan');
    expect(await field.inputValue()).toBe('profile.plan');
    expect(await branch.locator('[data-testid=condition-editor]').getAttribute('data-mode')).toBe('builder');
    expect(await branch.locator('[data-testid=cel-input]').count()).toBe(0);
    await branch.locator('.rule-operators').last().selectOption('=');
    await typeInto(branch.locator('[data-testid=rule-value]').last(), 'pro');
    await eventually(() => branch.locator('[data-testid=cel-preview]').textContent()).toBe('event.type == "purchase" && profile.plan == "pro"');
    await shot('02-rule-profile-plan');

    // "In crowd": the value box offers the tenant's crowds
    await branch.locator('.ruleGroup-addRule').click();
    await typeInto(branch.locator('[data-testid=rule-field]').last(), 'inCrowd');
    const crowd = branch.locator('[data-testid=rule-value]').last();
    expect(await crowd.getAttribute('aria-label')).toBe('Crowd');
    const listId = (await crowd.getAttribute('list'))!;
    await eventually(() =>
      page.locator(`datalist[id="${listId}"] option`).evaluateAll((options) => options.map((o) => (o as HTMLOptionElement).value)),
    ).toEqual(['engaged', 'vip']);
    expect(await branch.locator('[data-testid=cel-error]').textContent()).toBe('Pick the crowd for “In crowd”');
    await typeInto(crowd, 'vip');
    await eventually(() => branch.locator('[data-testid=cel-preview]').textContent()).toBe(
      'event.type == "purchase" && profile.plan == "pro" && inCrowd("vip")',
    );

    // "Profile attribute…" leaves "profile." to be finished, and says so meanwhile
    await branch.locator('.ruleGroup-addRule').click();
    const third = branch.locator('[data-testid=rule-field]').last();
    await third.fill('profile.');
    expect(await branch.locator('[data-testid=cel-error]').textContent()).toBe('Finish the field name: profile.<name>');
    await third.pressSequentially('country', { delay: 15 });
    await typeInto(branch.locator('[data-testid=rule-value]').last(), 'NL');
    await eventually(() => branch.locator('[data-testid=cel-preview]').textContent()).toBe(
      'event.type == "purchase" && profile.plan == "pro" && inCrowd("vip") && profile.country == "NL"',
    );
    expect(await branch.locator('[data-testid=condition-editor]').getAttribute('data-mode')).toBe('builder');
    await eventually(() => problemsOf('welcome').count()).toBe(0);
    await shot('03-rules-done');
  });

  it('marks a problem the moment it is made, in canvas words, and clears it once fixed', async () => {
    const branch = page.locator('[data-testid=branch-1]');
    await branch.getByRole('tab', { name: 'CEL' }).click();
    const cel = branch.locator('[data-testid=cel-input]');
    await cel.fill('event.type == ');
    await eventually(() => problemsOf('welcome').textContent()).toMatch(/^If 2 condition is not valid: /);
    // the node keeps its size: the message is cut, the inspector has it whole
    expect((await page.locator('[data-step=welcome]').boundingBox())!.height).toBeLessThan(170);
    expect(await page.locator('[data-testid=inspector-problems]').textContent()).toMatch(/^If 2 condition is not valid: /);
    await shot('04-problem-live');

    // a problem in the bar selects its step
    await selectStep(page, 'done');
    await page.locator('[data-testid=problem-link]', { hasText: 'welcome' }).click();
    await eventually(() => page.locator('[data-testid=step-name-input]').inputValue()).toBe('welcome');
    await page.locator('[data-testid=branch-1] [data-testid=cel-input]').fill('event.type == "open"');
    await eventually(() => problemsOf('welcome').count()).toBe(0);
    expect(await page.locator('[data-testid=problems-bar]').count()).toBe(0);

    await selectStep(page, 'nurture');
    await page.locator('[data-testid=cron-input]').fill('0 9 * * *');
    await eventually(() => problemsOf('nurture').textContent()).toMatch(/^Cron /);
    await page.locator('[data-testid=cron-input]').fill('0 0 9 * * *');
    await eventually(() => problemsOf('nurture').count()).toBe(0);

    await selectStep(page, 'pro_nurture');
    await page.locator('[data-testid=delay-input]').fill('2 days');
    expect(await page.locator('[data-testid=delay-input-hint]').textContent()).toBe('“2 days” is not a duration; write e.g. 30s, 5m, 2h, 7d or 1h30m');
    await eventually(() => problemsOf('pro_nurture').textContent()).toMatch(/^Wait for "2 days" is not a duration/);
    await shot('05-delay-typo');
    await page.locator('[data-testid=delay-input]').fill('2d');
    expect(await page.locator('[data-testid=delay-input-hint]').textContent()).toBe('= 2 days');
    await eventually(() => problemsOf('pro_nurture').count()).toBe(0);
  });

  it('puts new steps in free space and labels every branch edge with its output', async () => {
    await page.locator('.react-flow__pane').click({ position: { x: 30, y: 30 } });
    await page.locator('[data-testid=palette-branch]').focus();
    await page.keyboard.press('Enter');
    await page.locator('[data-step=branch]').waitFor();
    await page.locator('[data-testid=palette-branch]').focus();
    await page.keyboard.press('Enter');
    await page.locator('[data-step=branch_2]').waitFor();
    expect(await overlapping()).toEqual([]);

    await page.locator('[data-step=branch] [data-testid=add-after-branch-0]').click();
    await page.getByRole('menuitem', { name: '■ Exit' }).click();
    await page.locator('[data-step=exit]').waitFor();
    await page.locator('[data-step=branch] [data-testid=add-after-branch-1]').click();
    await page.getByRole('menuitem', { name: '■ Exit' }).click();
    await page.locator('[data-step=exit_2]').waitFor();
    expect(await overlapping()).toEqual([]);

    await selectStep(page, 'exit');
    await page.keyboard.press('ControlOrMeta+c');
    await page.keyboard.press('ControlOrMeta+v');
    await page.locator('[data-step=exit_copy]').waitFor();
    expect(await overlapping()).toEqual([]);

    // each edge says which output it leaves from; the inspector says where each branch leads
    await page.locator('.react-flow__controls-fitview').click();
    await selectStep(page, 'branch');
    expect(await page.locator('[data-testid=target-branch-0]').textContent()).toBe('→ goes to “exit”');
    expect(await page.locator('[data-testid=target-branch-1]').textContent()).toBe('→ goes to “exit_2”');
    const outputs = await page.locator('[data-testid=edge-label]').evaluateAll((labels) => labels.map((l) => l.getAttribute('data-output')));
    // a branch's output says its condition in a few words (the new branch waits for a purchase), never "if 1"
    expect(outputs).toEqual(expect.arrayContaining(['purchase', 'purchase and plan = pro…', 'open', 'else', '50%']));
    expect(outputs.filter((o) => /^if \d/.test(o ?? ''))).toEqual([]);
    await shot('06-free-space');

    await page.getByRole('button', { name: 'Auto-layout' }).click();
    await eventually(async () => {
      const [left, right] = await Promise.all([page.locator('[data-step=exit]').boundingBox(), page.locator('[data-step=exit_2]').boundingBox()]);
      return left!.x < right!.x;
    }).toBe(true);
    // React Flow places the laid-out nodes over a few frames: wait until they have settled, then none may overlap.
    await eventually(() => overlapping()).toEqual([]);
    await shot('07-auto-layout');
  });

  it('asks before leaving with unsaved edits, and offers them back after navigating away or reloading', async () => {
    const editorUrl = page.url();
    expect(await page.locator('.badge.unsaved').count()).toBe(1);
    page.once('dialog', (dialog) => void dialog.dismiss());
    await page.click('nav >> text=Crowds');
    expect(page.url()).toBe(editorUrl);
    page.once('dialog', (dialog) => void dialog.dismiss());
    await page.locator('[data-testid=tenant-picker]').selectOption(other.name);
    expect(page.url()).toBe(editorUrl);
    expect(await page.locator('[data-testid=tenant-picker]').inputValue()).toBe(tenant.name);

    page.once('dialog', (dialog) => void dialog.accept());
    await page.click('text=← Workflows');
    await page.waitForURL(`**/t/${tenant.name}`);
    await page.getByRole('link', { name: 'Welcome journey' }).click();
    await page.locator('[data-testid=draft-offer]').waitFor();
    expect(await page.locator('[data-step=exit_copy]').count()).toBe(0);
    await shot('08-draft-offer');
    await page.click('[data-testid=draft-restore]');
    await page.locator('[data-step=exit_copy]').waitFor();
    expect(await page.locator('[data-step=welcome] [data-testid=rule-field]').count()).toBe(0);
    expect(await page.locator('[data-step=ab_test] [data-testid=step-label]').textContent()).toBe('Which offer works better?');
    expect(await page.locator('.badge.unsaved').count()).toBe(1);

    // a reload (or a crash) keeps them too; discarding forgets them
    page.on('dialog', (dialog) => void dialog.accept());
    await page.reload();
    await page.locator('[data-testid=draft-offer]').waitFor();
    await page.click('[data-testid=draft-discard]');
    expect(await page.locator('[data-step=exit_copy]').count()).toBe(0);
    await page.reload();
    await page.locator('[data-step=welcome]').waitFor();
    expect(await page.locator('[data-testid=draft-offer]').count()).toBe(0);
  });
});
