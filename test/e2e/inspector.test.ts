import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { welcomeJourney, welcomeJourneyDraft } from '../../core/model/sample-workflows';
import { outputHandles, definitionToGraph } from '../../studio/convert';
import { api, createTenant } from '../helpers/api';
import { eventually, openWelcomeJourney, selectStep, useStudio } from './browser';

// The inspector of the demo journey at 1440×900: what each condition matches now and how the server runs it, the
// event types the tenant sends offered for event.type, a field name read whole, and a branch's wait timeout drawn,
// edited, saved and removed. Also: the demo journey opens laid out, its outputs leading left to right.

let page: Page;
let tenant: { name: string; key: string };
let workflowId: string;

const studio = useStudio('inspector');
const shot = studio.shot;
const USERS = 1_000;
const ENGAGED = [2000, 2001, 2002, 2003, 2004];
const profileOf = (user: number) => ({ plan: ['free', 'pro', 'team'][user % 3], age: 18 + (user % 60), country: user % 4 === 0 ? 'NL' : 'BE' });

describe('the inspector', () => {
  beforeAll(async () => {
    tenant = await createTenant(2);
    const lines = Array.from({ length: USERS }, (_, user) => JSON.stringify({ user, attributes: profileOf(user) })).join('\n');
    const imported = await api('POST', `/tenants/${tenant.name}/profiles/import`, { body: lines, headers: { 'content-type': 'application/x-ndjson' } });
    expect(imported.status, JSON.stringify(imported.body)).toBe(200);
    expect((await api('PUT', `/tenants/${tenant.name}/crowds/engaged`, { body: ENGAGED.join('\n'), headers: { 'content-type': 'text/plain' } })).status).toBe(
      201,
    );
    const events = [...[1, 2, 3].map((user) => ({ user, type: 'purchase' })), ...[4, 5, 6, 7, 8].map((user) => ({ user, type: 'open' }))];
    expect((await api('POST', '/events', { token: tenant.key, body: { events } })).status).toBe(202);
    page = await studio.open();
    workflowId = await openWelcomeJourney(page, tenant.name);
  });

  it('opens the demo journey laid out: each step of a branch or split below its output, left to right, none on another', async () => {
    const { nodes, edges } = definitionToGraph(welcomeJourney, welcomeJourneyDraft);
    for (const node of nodes) {
      const targets = outputHandles(node).map((h) => edges.find((e) => e.source === node.id && e.sourceHandle === h.id)!.target);
      if (targets.length < 2) continue;
      const xs = await Promise.all(targets.map(async (id) => (await page.locator(`[data-step="${id.replace(/^step-/, '')}"]`).boundingBox())!.x));
      expect(xs, `targets of ${node.data.name}`).toEqual([...xs].sort((a, b) => a - b));
    }
    const boxes = await Promise.all(nodes.map(async (n) => (await page.locator(`[data-step="${n.data.name}"]`).boundingBox())!));
    for (let i = 0; i < boxes.length; i++) {
      for (let j = i + 1; j < boxes.length; j++) {
        const [a, b] = [boxes[i], boxes[j]];
        expect(
          a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height,
          `${nodes[i].data.name} / ${nodes[j].data.name}`,
        ).toBe(false);
      }
    }
    await shot('01-demo-layout');
  });

  it('shows under a condition how many users match now, and that it runs as a bitmap plan, with why', async () => {
    await selectStep(page, 'nurture');
    const expected = ENGAGED.length + Array.from({ length: USERS }, (_, user) => profileOf(user)).filter((p) => p.country === 'NL' && p.age >= 30).length;
    await eventually(() => page.locator('[data-testid=audience]').textContent()).toBe(
      `exactly ${expected.toLocaleString('en-US')} users match now (of ${(USERS + ENGAGED.length).toLocaleString('en-US')})`,
    );
    const explain = page.locator('[data-testid=explain]');
    await eventually(() => explain.getAttribute('data-mode')).toBe('plan');
    expect(await page.locator('[data-testid=explain-mode]').textContent()).toBe('Bitmap plan');
    await explain.locator('summary').click();
    expect(await page.locator('[data-testid=explain-reason]').textContent()).toContain('bitmap plan');
    expect(await explain.locator('li').allTextContents()).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^profile\.age >= 30: range over the bit-sliced index/),
        expect.stringMatching(/^profile\.country == "NL": equality bitmap/),
      ]),
    );
    await shot('02-explain-plan');

    // an edit is explained again: event.* can only be answered per user, when the event arrives
    await page.getByRole('tab', { name: 'CEL' }).click();
    await page.locator('[data-testid=cel-input]').fill('event.data.amount > 10 && profile.plan == "pro"');
    await eventually(() => explain.getAttribute('data-mode')).toBe('per-user');
    expect(await page.locator('[data-testid=explain-mode]').textContent()).toBe('Per user');
    await eventually(() => page.locator('[data-testid=explain-reason]').textContent()).toContain('event.*');
    // who matches "now" means nothing for a condition on the event: it says so instead of counting
    expect(await page.locator('[data-testid=audience]').count()).toBe(0);
    expect(await page.locator('[data-testid=audience-per-event]').textContent()).toContain('Decided for each event');
    await shot('03-explain-per-user');
    const original = welcomeJourney.steps.find((s) => s.name === 'nurture')!;
    await page.locator('[data-testid=cel-input]').fill(original.kind === 'timer' ? original.condition! : '');
    await eventually(() => explain.getAttribute('data-mode')).toBe('plan');
  });

  it('offers the event types the tenant sent for event.type, and shows a field name whole', async () => {
    await selectStep(page, 'welcome');
    const branch = page.locator('[data-testid=branch-1]');
    const value = branch.locator('[data-testid=rule-value]').first();
    const listId = (await value.getAttribute('list'))!;
    await eventually(() =>
      page.locator(`datalist[id="${listId}"] option`).evaluateAll((options) => options.map((o) => `${(o as HTMLOptionElement).value}: ${o.textContent}`)),
    ).toEqual(['open: 5 events recently', 'purchase: 3 events recently']);
    // a profile field's value box offers its most common values, with how many users have each
    const planList = (await branch.locator('[data-testid=rule-value]').nth(1).getAttribute('list'))!;
    expect(
      await page
        .locator(`datalist[id="${planList}"] option`)
        .evaluateAll((options) => options.map((o) => `${(o as HTMLOptionElement).value}: ${o.textContent}`)),
    ).toEqual(['free: 334 users', 'pro: 333 users', 'team: 333 users']);
    const fields = branch.locator('[data-testid=rule-field]');
    expect(await fields.evaluateAll((inputs) => inputs.map((i) => (i as HTMLInputElement).value))).toEqual(['event.type', 'profile.plan']);
    // nothing cut off: each field box is as wide as its text
    expect(await fields.evaluateAll((inputs) => inputs.filter((i) => i.scrollWidth > i.clientWidth).map((i) => (i as HTMLInputElement).value))).toEqual([]);
    await shot('04-rule-fields');
  });

  it('adds a wait timeout to a branch step, connects and edits it, saves it, and removes it', async () => {
    await selectStep(page, 'welcome');
    await page.click('[data-testid=timeout-add]');
    const after = page.locator('[data-testid=timeout-input]');
    expect(await after.inputValue()).toBe('2d');
    expect(await page.locator('[data-testid=timeout-input-hint]').textContent()).toBe('= 2 days');
    await page.locator('[data-step=welcome] [data-testid=handle-timeout]').waitFor();
    expect(await page.locator('[data-testid=target-timeout]').textContent()).toContain('not connected');
    await eventually(() => page.locator('[data-step=welcome] [data-testid=step-problems]').textContent()).toContain('output “after 2d”');

    await after.fill('3 days');
    expect(await page.locator('[data-testid=timeout-input-hint]').textContent()).toContain('is not a duration');
    await after.fill('3d');
    await eventually(() => page.locator('[data-step=welcome] .handle-label', { hasText: 'after 3d' }).count()).toBe(1);
    expect(await page.locator('[data-step=welcome] .step-summary').textContent()).toBe('3 conditions · else after 3d');
    await page.click('[data-step=welcome] [data-testid=add-after-timeout]');
    await page.getByRole('menuitem', { name: '→ Direct' }).click();
    await page.locator('[data-step=direct]').waitFor();
    await page.locator('[data-testid=step-name-input]').fill('reminder');
    await page.locator('[data-step=reminder]').waitFor();
    await selectStep(page, 'welcome');
    expect(await page.locator('[data-testid=target-timeout]').textContent()).toBe('→ goes to “reminder”');
    await eventually(() => page.locator('[data-testid=edge-label][data-output="after 3d"]').count()).toBe(1);
    await eventually(() => page.locator('[data-step=welcome] [data-testid=step-problems]').count()).toBe(0);
    await page.locator('[data-testid=timeout]').scrollIntoViewIfNeeded();
    await shot('05-timeout');
    await page.click('[data-testid=save]');
    await eventually(() => page.locator('[data-testid=save-notice]').textContent()).toBe('Saved version 2.');
    const saved = await api('GET', `/tenants/${tenant.name}/workflows/${workflowId}`);
    expect(saved.body.definition.steps.find((s: { name: string }) => s.name === 'welcome').timeout).toEqual({ after: '3d', next: 'reminder' });

    await page.click('[data-testid=timeout-remove]');
    expect(await page.locator('[data-step=welcome] [data-testid=handle-timeout]').count()).toBe(0);
    expect(await page.locator('[data-testid=edge-label][data-output="after 3d"]').count()).toBe(0);
    expect(await page.locator('[data-testid=timeout-add]').count()).toBe(1);
    await selectStep(page, 'reminder');
    await page.getByRole('button', { name: 'Delete step' }).click();
    await page.click('[data-testid=save]');
    await eventually(() => page.locator('[data-testid=save-notice]').textContent()).toBe('Saved version 3.');
    const removed = await api('GET', `/tenants/${tenant.name}/workflows/${workflowId}`);
    expect(removed.body.definition.steps.find((s: { name: string }) => s.name === 'welcome').timeout).toBeUndefined();
    await shot('06-timeout-removed');
  });
});
