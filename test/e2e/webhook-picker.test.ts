import type { Locator, Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { welcomeJourney, welcomeJourneyDraft } from '../../core/model/sample-workflows';
import { api, createTenant } from '../helpers/api';
import { eventually, selectStep, useStudio } from './browser';

// A step's "On enter" picks one of the tenant's webhooks instead of a typed `webhook:<name>` tag (issue 32 §2): with
// none configured the inspector says so and links to the page that creates one; the step then shows where its users
// go; a step naming a webhook the tenant lacks says so; a free action tag is still one choice away.

let page: Page;
let tenant: { name: string };
let workflowId = '';
const studio = useStudio('webhook-picker');

const picker = () => page.getByTestId('enter-action-select');
const isFocused = (box: Locator) => box.evaluate((element) => element === document.activeElement);
const savedStep = async (name: string) =>
  (await api('GET', `/tenants/${tenant.name}/workflows/${workflowId}`)).body.definition.steps.find((s: { name: string }) => s.name === name);

/** Types into a box key by key; the box keeps each key and the focus. */
async function typeInto(box: Locator, text: string) {
  await box.click();
  for (let i = 1; i <= text.length; i++) {
    await page.keyboard.type(text[i - 1]);
    expect(await box.evaluate((element) => [(element as HTMLInputElement).value, element === document.activeElement])).toEqual([text.slice(0, i), true]);
  }
}

describe('picking a webhook for a step', () => {
  beforeAll(async () => {
    tenant = await createTenant(1);
    const created = await api('POST', `/tenants/${tenant.name}/workflows`, {
      body: { name: 'Welcome journey', definition: welcomeJourney, draft: welcomeJourneyDraft },
    });
    expect(created.status).toBe(201);
    workflowId = created.body.id;
    page = await studio.open();
  });

  it('says the tenant has no webhooks yet and links to the page that creates one', async () => {
    await page.goto(`/t/${tenant.name}/workflows/${workflowId}`);
    await page.locator('[data-step=done]').waitFor();
    await selectStep(page, 'done');
    expect(await picker().inputValue()).toBe('');
    await eventually(() => page.getByTestId('no-webhooks').textContent()).toBe(
      'No webhooks yet. Create a webhook to send the users entering a step to another system.',
    );
    await studio.shot('01-no-webhooks');
    await page.getByTestId('create-webhook-link').click();
    await page.waitForURL(`**/t/${tenant.name}/webhooks`);

    // the marketer adds one there, typing its name and address
    await typeInto(page.getByTestId('webhook-name'), 'crm');
    await typeInto(page.getByTestId('webhook-url'), 'https://crm.example.com/hooks/crowdflow');
    await page.getByTestId('webhook-create').click();
    await page.locator('[data-webhook=crm]').waitFor();
  });

  it('picks the webhook from the list with the keyboard, and the step shows where its users go', async () => {
    await page.goto(`/t/${tenant.name}/workflows/${workflowId}`);
    await page.locator('[data-step=done]').waitFor();
    await selectStep(page, 'done');
    await eventually(() => picker().locator('option').allTextContents()).toEqual([
      'Nothing',
      'Webhook “crm” (crm.example.com)',
      'An action tag for integrations…',
    ]);
    expect(await page.getByTestId('no-webhooks').count()).toBe(0);
    // a closed list chooses by the first letters typed, as people pick from one
    await picker().focus();
    await page.keyboard.type('Web');
    await eventually(() => picker().inputValue()).toBe('webhook:crm');
    expect(await isFocused(picker())).toBe(true);
    await eventually(() => page.locator('[data-step=done] [data-testid=step-webhook]').textContent()).toBe('⇢ webhook “crm”');
    await studio.shot('02-picked');

    await page.getByTestId('save').click();
    await eventually(() => page.getByTestId('save-notice').textContent()).toContain('Saved version 2');
    expect((await savedStep('done')).enterAction).toBe('webhook:crm');
  });

  it('keeps a free action tag one choice away, typed key by key', async () => {
    await selectStep(page, 'customer');
    // the demo's "send_thank_you" is a tag, not a webhook
    expect(await picker().inputValue()).toBe('tag');
    expect(await page.getByTestId('enter-action-tag').inputValue()).toBe('send_thank_you');
    await selectStep(page, 'done');
    await picker().focus();
    await page.keyboard.type('An');
    await eventually(() => picker().inputValue()).toBe('tag');
    expect(await page.getByTestId('enter-action-tag').inputValue()).toBe('');
    await typeInto(page.getByTestId('enter-action-tag'), 'bye');
    expect(await page.locator('[data-step=done] [data-testid=step-webhook]').count()).toBe(0);
    // Escape leaves the box; nothing typed is lost and no step is touched
    await page.keyboard.press('Escape');
    expect(await page.locator('[data-step=done]').count()).toBe(1);
    await page.getByTestId('save').click();
    await eventually(() => page.getByTestId('save-notice').textContent()).toContain('Saved version 3');
    expect((await savedStep('done')).enterAction).toBe('bye');
  });

  it('says so when a step names a webhook the tenant does not have', async () => {
    const definition = {
      ...welcomeJourney,
      steps: welcomeJourney.steps.map((s) => (s.name === 'done' ? { ...s, enterAction: 'webhook:gone' } : s)),
    };
    expect((await api('PUT', `/tenants/${tenant.name}/workflows/${workflowId}`, { body: { definition } })).status).toBe(200);
    await page.goto(`/t/${tenant.name}/workflows/${workflowId}`);
    await page.locator('[data-step=done]').waitFor();
    await selectStep(page, 'done');
    await eventually(() => page.getByTestId('enter-action-missing').textContent()).toBe(
      'This tenant has no webhook “gone”: pick one of its webhooks, or create it.',
    );
    expect(await picker().inputValue()).toBe('webhook:gone');
    expect(await picker().getAttribute('aria-invalid')).toBe('true');
    await studio.shot('03-missing');
  });
});
