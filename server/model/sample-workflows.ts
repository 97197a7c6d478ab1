import type { WorkflowDefinition, WorkflowDraft } from './workflow';

// The demo journey the seed creates: every step kind, laid out top to bottom for the canvas.

export const WELCOME_JOURNEY_NAME = 'Welcome journey';

export const welcomeJourney: WorkflowDefinition = {
  steps: [
    {
      name: 'welcome',
      kind: 'branch',
      enterAction: 'send_welcome_email',
      ttl: '7d',
      branches: [
        { condition: 'event.type == "purchase"', next: 'customer' },
        { condition: 'event.type == "open" && profile.plan == "pro"', next: 'pro_nurture' },
        { condition: 'event.type == "open"', next: 'nurture' },
      ],
    },
    {
      name: 'nurture',
      kind: 'timer',
      cron: '0 0 9 * * *',
      condition: 'inCrowd("engaged") || (profile.country == "NL" && profile.age >= 30)',
      next: 'ab_test',
      enterAction: 'tag_nurture',
    },
    { name: 'pro_nurture', kind: 'delay', after: '2h', next: 'ab_test', enterAction: 'send_pro_tips' },
    { name: 'ab_test', kind: 'split', paths: [{ percent: 50, next: 'offer_a' }, { percent: 50, next: 'offer_b' }] },
    { name: 'offer_a', kind: 'parallel', actions: ['send_discount_email', 'push_discount'], next: 'done' },
    { name: 'offer_b', kind: 'direct', enterAction: 'send_free_shipping_email', next: 'done' },
    { name: 'customer', kind: 'direct', enterAction: 'send_thank_you' },
    { name: 'done', kind: 'direct' },
  ],
};

export const welcomeJourneyDraft: WorkflowDraft = {
  positions: {
    welcome: { x: 300, y: 0 },
    nurture: { x: 120, y: 160 },
    pro_nurture: { x: 360, y: 160 },
    customer: { x: 600, y: 160 },
    ab_test: { x: 240, y: 320 },
    offer_a: { x: 120, y: 480 },
    offer_b: { x: 360, y: 480 },
    done: { x: 240, y: 640 },
  },
  labels: {
    welcome: 'Signed up: what do they do first?',
    nurture: 'Every morning at 09:00 UTC, engaged users or Dutch users aged 30+',
    pro_nurture: 'Pro users: tips two hours later',
    ab_test: 'Offer A/B test',
    customer: 'Bought: thank them',
  },
};
