import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { api, createTenant } from '../helpers/api';
import { connect, dropStep, eventually, useStudio } from './browser';

// An event-triggered journey with a goal, drawn and configured in the studio, started without a crowd, fed by
// events over the API; the canvas shows the counts and the chart draws them over time.

let page: Page;
let tenant: { name: string; key: string };
let workflowId: string;

const studio = useStudio('entry');
const shot = studio.shot;

describe('event-triggered entry and goal in the studio', () => {
  beforeAll(async () => {
    tenant = await createTenant(2);
    page = await studio.open();
  });

  it('draws a journey whose users enter on "signup", with a purchase goal, and saves it', async () => {
    await page.goto(`/t/${tenant.name}`);
    await page.getByLabel('New workflow name').fill('Signup journey');
    await page.getByRole('button', { name: 'New workflow' }).click();
    await page.waitForURL(/\/workflows\/wf_/);
    workflowId = page.url().split('/').pop()!;
    await page.locator('[data-step=start]').waitFor();
    const canvas = (await page.locator('[data-testid=canvas]').boundingBox())!;
    const start = (await page.locator('[data-step=start]').boundingBox())!;
    await dropStep(page, 'exit', { x: start.x - canvas.x + start.width / 2, y: start.y - canvas.y + 220 }, 'done');
    await connect(page, 'start', 'next', 'done');
    await eventually(() => page.locator('.react-flow__edge').count()).toBe(1);

    // Nothing selected: the inspector edits the workflow's entry and goal.
    await page.locator('.react-flow__pane').click({ position: { x: 20, y: 20 } });
    await page.locator('[data-testid=entry-enabled]').check();
    await page.locator('[data-testid=entry-event-input]').fill('signup');
    await page.locator('[data-testid=goal-enabled]').check();
    await shot('01-configured');
    await page.click('[data-testid=save]');
    await eventually(() => page.locator('[data-testid=save-notice]').textContent()).toMatch(/^Saved version \d+\.$/);
    const saved = await api('GET', `/tenants/${tenant.name}/workflows/${workflowId}`);
    expect(saved.body.definition).toMatchObject({ entry: { event: 'signup', reentry: 'once' }, goal: { condition: 'event.type == "purchase"' } });
  });

  it('starts without a crowd; users who sign up appear on the nodes, converted users in the counts, and the chart draws them', async () => {
    await page.click('[data-testid=start]');
    expect(await page.locator('[data-testid=start-trigger-note]').textContent()).toContain('“signup”');
    await page.click('[data-testid=start-confirm]');
    await eventually(() => page.locator('[data-testid=start-result]').textContent(), 20_000).toContain(
      'Started without a crowd; users enter on “signup” events',
    );
    await page.click('[data-testid=start-dialog] >> text=Close');

    const events = [1, 2, 3].map((user) => ({ user, type: 'signup' })).concat([{ user: 1, type: 'purchase' }]);
    expect((await api('POST', '/events', { token: tenant.key, body: { events } })).status).toBe(202);
    const count = (step: string) => page.locator(`[data-step="${step}"] [data-testid=step-count]`).getAttribute('data-count');
    await eventually(() => count('done'), 10_000).toBe('3');
    const running = (await api('GET', `/tenants/${tenant.name}/workflows/${workflowId}`)).body.running.instanceId;
    expect((await api('GET', `/tenants/${tenant.name}/instances/${running}/counts`)).body).toMatchObject({
      entered: 3,
      converted: 1,
      convertedFrom: { done: 1 },
    });

    // The toolbar counts the users who entered on events (the start itself had nobody).
    await eventually(() => page.locator('[data-testid=running-badge]').textContent()).toMatch(/^running v\d+ · 3 users$/);

    // The instance was sampled (empty) when it started; the chart draws that sample and ends at the live counts.
    await page.click('[data-testid=chart]');
    await page.locator('[data-testid=counts-chart]').waitFor();
    await page.locator('[data-testid=chart-step-done]').check();
    const plot = page.locator('[data-testid=counts-chart-plot]');
    await eventually(() => plot.count(), 20_000).toBe(1);
    await eventually(() => plot.locator('.recharts-line').count()).toBeGreaterThan(0);
    await eventually(async () => Number(await plot.getAttribute('data-points')), 20_000).toBeGreaterThanOrEqual(2);
    expect(JSON.parse((await plot.getAttribute('data-last-steps'))!)).toMatchObject({ done: 3 });
    await shot('02-chart');
  });
});
