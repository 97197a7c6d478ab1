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
    {
      name: 'ab_test',
      kind: 'split',
      paths: [
        { percent: 50, next: 'offer_a' },
        { percent: 50, next: 'offer_b' },
      ],
    },
    { name: 'offer_a', kind: 'parallel', actions: ['send_discount_email', 'push_discount'], next: 'done' },
    { name: 'offer_b', kind: 'direct', enterAction: 'send_free_shipping_email', next: 'done' },
    { name: 'customer', kind: 'direct', enterAction: 'send_thank_you' },
    { name: 'done', kind: 'direct' },
  ],
};

export const welcomeJourneyDraft: WorkflowDraft = {
  // Each output's step below it, in the outputs' order (if 1, if 2, if 3 / 50%, 50%) left to right, so no two edges
  // cross; ranks 210 px apart leave room for a label and a count on each step.
  positions: {
    welcome: { x: 280, y: 0 },
    customer: { x: 0, y: 210 },
    pro_nurture: { x: 280, y: 210 },
    nurture: { x: 560, y: 210 },
    ab_test: { x: 420, y: 420 },
    offer_a: { x: 280, y: 630 },
    offer_b: { x: 560, y: 630 },
    done: { x: 420, y: 840 },
  },
  labels: {
    welcome: 'Signed up: what do they do first?',
    nurture: 'Every morning at 09:00 UTC, engaged users or Dutch users aged 30+',
    pro_nurture: 'Pro users: tips two hours later',
    ab_test: 'Offer A/B test',
    customer: 'Bought: thank them',
  },
};
