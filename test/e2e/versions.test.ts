import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { welcomeJourney, welcomeJourneyDraft } from '../../core/model/sample-workflows';
import type { WorkflowDefinition } from '../../core/model/workflow';
import { api, createTenant } from '../helpers/api';
import { eventually, useStudio } from './browser';

// Versions (issue 32 §3): two versions compared in words, the journey's own parts (goal, entry) included and exit
// steps called exits; "Restore this version" asks first, naming the version, then saves it again as the newest.

let page: Page;
let tenant = '';
let workflowId = '';
const studio = useStudio('versions');

const v2: WorkflowDefinition = {
  ...welcomeJourney,
  goal: { condition: 'event.type == "purchase"' },
  steps: [
    ...welcomeJourney.steps.map((step) => {
      if (step.name === 'pro_nurture') return { ...step, after: '4h' };
      if (step.name === 'customer') return { ...step, next: 'thanks' };
      return step;
    }),
    { name: 'thanks', kind: 'direct' },
  ],
};

const changes = () => page.getByTestId('change').evaluateAll((items) => items.map((item) => item.textContent));

describe('versions of a journey', () => {
  beforeAll(async () => {
    tenant = (await createTenant(1)).name;
    const created = await api('POST', `/tenants/${tenant}/workflows`, {
      body: { name: 'Welcome journey', definition: welcomeJourney, draft: welcomeJourneyDraft },
    });
    expect(created.status).toBe(201);
    workflowId = created.body.id;
    expect((await api('PUT', `/tenants/${tenant}/workflows/${workflowId}`, { body: { definition: v2 } })).status).toBe(200);
    page = await studio.open(`/t/${tenant}/workflows/${workflowId}`);
  });

  it('says in words what changed between two versions, the journey’s goal and exit steps included', async () => {
    await page.locator('[data-step=thanks]').waitFor();
    await page.getByRole('button', { name: 'Versions' }).click();
    await page.getByTestId('versions-dialog').waitFor();
    // the previous version is already picked to compare with the latest
    expect(await page.getByTestId('compare-left').inputValue()).toBe('1');
    expect(await page.getByTestId('compare-right').inputValue()).toBe('2');
    await page.getByTestId('compare').focus();
    await page.keyboard.press('Enter');
    await eventually(changes).toEqual([
      'The journey changedGoal: event.type == "purchase" (new)',
      'pro_nurture changedWait for: 2h → 4h',
      'customer changedKind: Exit → DirectNext step: thanks (new)',
      'thanks addedExit step',
    ]);
    await studio.shot('01-compare');
  });

  it('restores an older version as the newest, after a question naming it', async () => {
    const restore = page.getByTestId('restore-v1');
    await restore.click();
    const question = page.getByTestId('restore-dialog');
    await question.waitFor();
    expect(await question.locator('h2').textContent()).toBe('Restore version 1?');
    expect(await question.locator('p').first().textContent()).toBe('Version 1 is saved again as version 3, the newest. Version 2 stays in the list.');
    await studio.shot('02-restore-question');
    // Escape keeps everything as it was and gives the focus back to the button
    await page.keyboard.press('Escape');
    await eventually(() => question.count()).toBe(0);
    expect(await restore.evaluate((element) => element === document.activeElement)).toBe(true);
    expect((await api('GET', `/tenants/${tenant}/workflows/${workflowId}`)).body.version).toBe(2);

    await page.keyboard.press('Enter');
    await question.waitFor();
    await page.getByTestId('restore-confirm').click();
    await eventually(() => question.count()).toBe(0);
    const saved = (await api('GET', `/tenants/${tenant}/workflows/${workflowId}`)).body;
    expect(saved.version).toBe(3);
    expect(saved.definition).toEqual(welcomeJourney);
    // the list has the new version, and the canvas shows it, saved
    await eventually(() => page.getByTestId('version-item').count()).toBe(3);
    await page.keyboard.press('Escape');
    await eventually(() => page.getByTestId('versions-dialog').count()).toBe(0);
    await eventually(() => page.locator('[data-step=thanks]').count()).toBe(0);
    expect(await page.getByTestId('version').textContent()).toBe('v3');
    expect(await page.locator('.badge.unsaved').count()).toBe(0);
    // The restore was saved as v3, so undoing it goes back past that save, and the button says so (de41f15).
    expect(await page.getByTestId('undo').getAttribute('aria-label')).toBe('Undo: restore version 1, made before the last save');
    await studio.shot('03-restored');
  });
});
