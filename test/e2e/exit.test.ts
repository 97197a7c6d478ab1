import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { api, createTenant } from '../helpers/api';
import { eventually, shot, useStudio } from './browser';

// Exit criteria (issue 37 §6) in the studio: with nothing selected, a marketer types "Exit when" as CEL into the side
// panel key by key (the focus stays in the box; a half-typed condition is named under it), saves, starts the journey,
// and once users unsubscribe sees on their step how many exited early, and the total in the panel.

let page: Page;
const studio = useStudio('exit');

describe('exit criteria on the canvas', () => {
  it('are typed in the side panel, then each step shows the users who exited early', async () => {
    const tenant = await createTenant(2);
    const base = `/tenants/${tenant.name}`;
    const users = Array.from({ length: 20 }, (_, i) => i + 1);
    expect((await api('PUT', `${base}/crowds/launch`, { body: users.join('\n'), headers: { 'content-type': 'text/plain' } })).status).toBe(201);
    const definition = {
      steps: [
        { name: 'welcome', kind: 'direct', next: 'wait' },
        { name: 'wait', kind: 'branch', branches: [{ condition: 'event.type == "buy"', next: 'bought' }] },
        { name: 'bought', kind: 'direct' },
      ],
    };
    const created = await api('POST', `${base}/workflows`, { body: { name: 'Spring sale', definition } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);

    page = await studio.open();
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.goto(`/t/${tenant.name}/workflows/${created.body.id}`);
    await page.locator('.react-flow__pane').click({ position: { x: 20, y: 20 } });
    await page.getByRole('tablist', { name: 'Exit when: edit as' }).getByRole('tab', { name: 'CEL' }).click();
    const box = page.getByRole('textbox', { name: 'Exit when (CEL)' });
    const focused = () => box.evaluate((element) => element === document.activeElement);
    await box.click();
    const condition = 'event.type == "unsubscribe"';
    for (const key of condition) {
      await page.keyboard.type(key);
      expect(await focused(), `focus after typing ${key}`).toBe(true);
      // Half typed, the condition is named as not valid yet, under the box.
      if (key === '=' && (await box.inputValue()).endsWith('==')) await eventually(() => page.getByTestId('cel-error').count()).toBe(1);
    }
    expect(await box.inputValue()).toBe(condition);
    await eventually(() => page.getByTestId('cel-error').count()).toBe(0);
    await eventually(() => page.getByTestId('problems-bar').count()).toBe(0);
    await page.click('[data-testid=save]');
    await eventually(() => page.locator('[data-testid=save-notice]').textContent()).toMatch(/^Saved version 2\.$/);
    expect((await api('GET', `${base}/workflows/${created.body.id}`)).body.definition.exit).toEqual({ condition });

    const started = await api('POST', `${base}/workflows/${created.body.id}/start`, { body: { crowd: 'launch' } });
    expect(started.status, JSON.stringify(started.body)).toBeLessThan(300);
    const { instanceId } = started.body;
    await eventually(async () => (await api('GET', `${base}/instances/${instanceId}/counts`, { token: tenant.key })).body.total, 20_000).toBe(20);
    const events = [...[1, 2, 3].map((user) => ({ user, type: 'unsubscribe' })), { user: 4, type: 'buy' }];
    expect((await api('POST', '/events', { token: tenant.key, body: { tenant: tenant.name, events } })).status).toBe(202);

    const badge = page.locator('[data-step=wait] [data-testid=step-exited]');
    await eventually(() => badge.textContent(), 20_000).toBe('⏏ 3 exited');
    expect(await badge.getAttribute('title')).toBe("3 exited early: they met the journey's exit criteria in this step");
    expect(await page.locator('[data-step=bought] [data-testid=step-exited]').count()).toBe(0);
    await page.locator('.react-flow__pane').click({ position: { x: 20, y: 20 } });
    await eventually(() => page.getByTestId('exit-summary').textContent()).toBe('3 users exited early.');
    await shot(page, 'exit-01-canvas');

    // The step's own line, and its menu's export of those who exited.
    await page.locator('[data-step=wait]').click();
    await eventually(() => page.getByTestId('step-exited-line').textContent()).toBe("⏏ Exited early: 3 users met the journey's exit criteria in this step.");
    await page.locator('[data-step=wait] [data-testid=step-menu]').click();
    const link = page.getByTestId('export-exited');
    expect(await link.getAttribute('href')).toMatch(/\/steps\/wait\/export\?format=csv&users=exited$/);
    await shot(page, 'exit-02-step');
  });
});
