import { describe, expect, it } from 'vitest';
import { api, createTenant } from '../helpers/api';
import { eventually, selectStep, useStudio } from './browser';

// Experiments that pick a winner (issue 37 §5) in the studio: a marketer selects the split step, ticks "Run as
// experiment", types the date it should decide by itself key by key (the focus stays in the box), saves, starts the
// journey, and sees each path's users, conversion, 95% interval and chance of being best; "Send the rest to “b”" asks
// first (Escape backs out, the focus returns to the button), then makes and applies the winner's version.

const studio = useStudio('experiment');

describe('an experiment on the canvas', () => {
  it('is switched on in the split step, then shows each path and sends the rest to the winner', async () => {
    const tenant = await createTenant(2);
    const base = `/tenants/${tenant.name}`;
    const users = Array.from({ length: 1000 }, (_, i) => i + 1);
    expect((await api('PUT', `${base}/crowds/launch`, { body: users.join('\n'), headers: { 'content-type': 'text/plain' } })).status).toBe(201);
    const definition = {
      steps: [
        {
          name: 'ab',
          kind: 'split',
          paths: [
            { percent: 50, next: 'a' },
            { percent: 50, next: 'b' },
          ],
        },
        { name: 'a', kind: 'branch', branches: [{ condition: 'event.type == "buy"', next: 'bought' }] },
        { name: 'b', kind: 'branch', branches: [{ condition: 'event.type == "buy"', next: 'bought' }] },
        { name: 'bought', kind: 'direct' },
      ],
      goal: { condition: 'event.type == "buy"' },
    };
    const created = await api('POST', `${base}/workflows`, { body: { name: 'Pricing page test', definition } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const workflowPath = `${base}/workflows/${created.body.id}`;

    const page = await studio.open(`/t/${tenant.name}/workflows/${created.body.id}`);
    await page.setViewportSize({ width: 1280, height: 800 });
    await selectStep(page, 'ab');
    await page.getByTestId('experiment-toggle').click();
    const summary = page.locator('[data-step=ab] .step-summary');
    await eventually(() => summary.textContent()).toBe('50% / 50% · experiment');
    const after = page.getByTestId('experiment-after');
    await after.click();
    for (const key of '2030-01-01T09:00:00Z') {
      await page.keyboard.type(key);
      expect(await after.evaluate((element) => element === document.activeElement), `focus after typing ${key}`).toBe(true);
    }
    await eventually(() => page.getByTestId('problems-bar').count()).toBe(0);
    await page.click('[data-testid=save]');
    await eventually(() => page.locator('[data-testid=save-notice]').textContent()).toMatch(/^Saved version 2\.$/);
    expect((await api('GET', workflowPath)).body.definition.steps[0].experiment).toEqual({ autoWinner: { after: '2030-01-01T09:00:00Z' } });

    const started = await api('POST', `${workflowPath}/start`, { body: { crowd: 'launch' } });
    expect(started.status, JSON.stringify(started.body)).toBeLessThan(300);
    const { instanceId } = started.body;
    const stepIds = async (step: string) => {
      const read = () => api('GET', `${base}/instances/${instanceId}/steps/${step}/export`, { token: tenant.key });
      await eventually(async () => (await read()).status, 20_000).toBe(200);
      return String((await read()).body)
        .split('\n')
        .filter(Boolean)
        .map(Number);
    };
    const [a, b] = [await stepIds('a'), await stepIds('b')];
    // 20 of path a's users buy (about 4%), 60 of path b's (about 12%).
    const buyers = [...a.slice(0, 20), ...b.slice(0, 60)].map((user) => ({ user, type: 'buy' }));
    expect((await api('POST', '/events', { token: tenant.key, body: { tenant: tenant.name, events: buyers } })).status).toBe(202);

    const rate = (x: number, n: number) => `${Math.round((x / n) * 1000) / 10}%`;
    const rows = page.getByTestId('experiment-path');
    await eventually(async () => (await rows.allTextContents()).map((row) => row.replace(/\d+(\.\d)?%–\d+(\.\d)?%/, '[interval]')), 20_000).toEqual([
      `→ a${a.length}20 · ${rate(20, a.length)}[interval]<0.1%`,
      `→ b${b.length}60 · ${rate(60, b.length)}[interval]>99.9%`,
    ]);
    expect(await page.getByTestId('experiment-verdict').textContent()).toBe('“b” is best with >99.9% probability.');
    await page.getByTestId('experiment-results').scrollIntoViewIfNeeded();
    await studio.shot('01-paths');

    // Asked first: Escape backs out and gives the focus back to the button.
    const send = page.getByTestId('experiment-send-b');
    await send.click();
    await page.getByTestId('experiment-dialog').waitFor();
    await page.keyboard.press('Escape');
    await eventually(() => page.getByTestId('experiment-dialog').count()).toBe(0);
    expect(await send.evaluate((element) => element === document.activeElement)).toBe(true);
    await send.click();
    await studio.shot('02-confirm');
    await page.getByTestId('experiment-confirm').click();
    await eventually(() => page.getByTestId('experiment-sent').textContent(), 20_000).toBe('Saved as v3 and applied to the running instance.');
    await eventually(() => page.getByTestId('experiment-verdict').textContent(), 20_000).toBe(
      'Users already past the split keep their paths, and each path goes on counting its conversions.',
    );
    expect(await page.getByTestId('experiment-decided').textContent()).toBe('“b” won (decided by hand): everyone new goes there.');
    expect(await page.getByTestId('experiment-send-a').count()).toBe(0);
    expect(await summary.textContent()).toBe('0% / 100% · “b” won');
    // The toolbar no longer says "Saved version 2." once version 3 runs.
    await eventually(() => page.getByTestId('version').textContent()).toBe('v3');
    expect(await page.getByTestId('save-notice').count()).toBe(0);
    const saved = (await api('GET', workflowPath)).body;
    expect(saved.version).toBe(3);
    expect(saved.definition.steps[0].paths).toEqual([
      { percent: 0, next: 'a' },
      { percent: 100, next: 'b' },
    ]);
    expect((await api('GET', `${base}/instances/${instanceId}`)).body.version).toBe(3);
    await page.getByTestId('experiment-results').scrollIntoViewIfNeeded();
    await studio.shot('03-sent');
  });
});
