// The HTTP surface of webhook destinations and their delivery logs (app/api/v1/tenants/[tenant]/webhooks/**).
import { z } from 'zod';
import { operation } from '../openapi-kit';
import { DELIVERY_STATUSES, MAX_LOG_PAGE } from './deliveries';
import { CapExempt, CreateCapBody, UpdateCapBody } from './caps';
import { CreateDestinationBody, UpdateDestinationBody } from './destinations';
import { PutQuietHoursBody } from './quiet-rules';

const Destination = z.object({
  name: z.string(),
  url: z.string(),
  headerNames: z.array(z.string()).describe('Header values are write-only (they often hold credentials)'),
  secretSet: z.literal(true).describe('The signing secret is write-only'),
  batchSize: z.number(),
  timeoutMs: z.number(),
  allNotifications: z.boolean(),
  cursor: z.number().describe('The journal seq read through'),
  lostThrough: z
    .number()
    .describe('Journal retention deleted moves up to this seq before they were cut; the receiver was sent a `lost` delivery for them (0: none)'),
  actionTag: z.string().describe('The enter action that sends a step\'s entering users here, e.g. "webhook:crm"'),
  createdAt: z.string(),
  updatedAt: z.string(),
});

const Delivery = z.object({
  id: z.string().describe("Also the Crowdflow-Delivery-Id header and the body's id: de-duplicate on it"),
  type: z
    .enum(['moves', 'lost'])
    .describe(
      '`lost`: its body `{"type":"lost","lost":{"after":A,"through":T}}` tells the receiver that journal retention deleted moves with seq in (A, T] before they were cut',
    ),
  lost: z.object({ after: z.number(), through: z.number() }).optional(),
  status: z.enum(DELIVERY_STATUSES),
  users: z.number().describe('User ids in the body'),
  attempts: z.number(),
  replays: z.number(),
  lastStatus: z.number().nullable().describe('HTTP status of the last attempt (null: no answer)'),
  lastError: z.string().nullable().describe('Why the last attempt failed: HTTP status, timeout, connection error, or a refused private address'),
  lastResponse: z
    .string()
    .nullable()
    .optional()
    .describe("The start (≤ 200 characters) of the receiver's answer to the last failed attempt; only for the admin token or studio session"),
  lastAttemptAt: z.string().nullable(),
  deliveredAt: z.string().nullable(),
  createdAt: z.string(),
});

const Cap = z.object({
  name: z.string(),
  maxDeliveries: z.number().describe('At most this many action deliveries per user per window'),
  window: z.string().describe('e.g. "1d": fixed windows counted from the epoch in UTC'),
  windowMs: z.number(),
  destination: z.string().nullable().describe('The one destination this cap counts; null: every destination'),
  exempt: CapExempt,
  createdAt: z.string(),
  updatedAt: z.string(),
});

const CAP_RULE = [
  'An action delivery is a move into a step whose enter action is `webhook:<name>`, sent to that destination',
  '(moves an `allNotifications` destination receives for no tag of its own are not actions and are never capped).',
  "A delivery to a user who got `maxDeliveries` deliveries counted by this cap in the window of the move's time is",
  'skipped: the user still moves, the destination is not sent that user, and the skip is counted per step',
  "(the counts' `capped`, and `users=capped` on the step export). Deliveries of exempt journeys and steps are neither",
  'skipped nor counted. Several caps may apply to one delivery: it is skipped if any is reached, and counted by each.',
].join(' ');

const capTags = ['frequency caps'];

const QuietHours = z.object({
  start: z.string().describe("HH:MM: quiet hours begin, in each user's zone"),
  end: z.string().describe('HH:MM: they end; before `start` the window spans midnight'),
  mode: z.enum(['hold', 'drop']),
  zoneAttribute: z.string().describe("The profile attribute holding each user's IANA zone"),
  defaultZone: z.string().describe('The zone of users without a valid one of their own'),
  createdAt: z.string(),
  updatedAt: z.string(),
});

const QUIET_RULE = [
  "No action deliveries between `start` and `end` in each user's own time zone (the profile attribute `zoneAttribute`,",
  'as local-time timers read it; `defaultZone` for users without a known IANA zone). A delivery due inside the window is',
  'held and sent when the window opens in that zone (`hold`: the users of one move are grouped by zone, one bitmap per',
  'zone) or not sent at all (`drop`). Users still move; the counts show `quiet` {waiting, dropped} per step and the step',
  'export `users=quiet` who waits. A journey overrides the rule with `quietHours` in its workflow definition (false: none).',
  'Frequency caps decide first and count a delivery when it is due; a held delivery is sent as it was cut, under its own id.',
].join(' ');

const tags = ['webhooks'];
const params = ['tenant', 'name'];

export const paths: Record<string, object> = {
  '/tenants/{tenant}/webhooks': {
    get: operation({
      summary: 'List webhook destinations',
      tags,
      params: ['tenant'],
      ok: { status: 200, description: 'Destinations', schema: z.object({ destinations: z.array(Destination) }) },
      errors: [404],
    }),
    post: operation({
      summary: 'Create a webhook destination',
      description: [
        'Moves into steps whose enter action is `webhook:<name>` (or, with `allNotifications`, every move of the tenant)',
        'are POSTed to `url` in batches of at most `batchSize` user ids, signed with',
        '`Crowdflow-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, t + "." + body)>`.',
        'Without `secret` one is generated and returned in this response only.',
        'A URL whose host is a private, loopback or link-local address (or localhost) is refused with 400 unless the operator',
        'allows private destinations (CROWDFLOW_WEBHOOK_ALLOW_PRIVATE=1, or the tenant limit `webhookPrivateAddresses`);',
        'every delivery checks the addresses the host resolves to as well.',
      ].join(' '),
      tags,
      params: ['tenant'],
      body: CreateDestinationBody,
      ok: { status: 201, description: 'Created (with `secret` when it was generated)', schema: Destination.extend({ secret: z.string().optional() }) },
      errors: [404, 409],
    }),
  },
  '/tenants/{tenant}/webhooks/{name}': {
    get: operation({ summary: 'A webhook destination', tags, params, ok: { status: 200, description: 'Destination', schema: Destination }, errors: [404] }),
    patch: operation({
      summary: 'Change a webhook destination (URL, secret, headers, batch size, timeout, allNotifications)',
      tags,
      params,
      body: UpdateDestinationBody,
      ok: { status: 200, description: 'Changed', schema: Destination },
      errors: [404],
    }),
    delete: operation({
      summary: 'Delete a webhook destination and its delivery log',
      tags,
      params,
      ok: { status: 204, description: 'Deleted' },
      errors: [404],
    }),
  },
  '/tenants/{tenant}/webhooks/{name}/deliveries': {
    get: operation({
      summary: 'The delivery log of a destination, newest first (without bodies)',
      tags,
      params,
      query: {
        status: `One of ${DELIVERY_STATUSES.join(', ')}`,
        limit: `Page size, default 50, at most ${MAX_LOG_PAGE}`,
        before: 'The `next` of the previous page',
      },
      ok: { status: 200, description: 'A page', schema: z.object({ deliveries: z.array(Delivery), next: z.string().optional() }) },
      errors: [404],
    }),
  },
  '/tenants/{tenant}/webhooks/{name}/deliveries/{id}': {
    get: operation({
      summary: 'One delivery, with the exact body every attempt sends',
      tags,
      params: [...params, 'id'],
      ok: { status: 200, description: 'Delivery', schema: Delivery.extend({ body: z.unknown() }) },
      errors: [404],
    }),
  },
  '/tenants/{tenant}/webhooks/{name}/deliveries/{id}/replay': {
    post: operation({
      summary: 'Send a delivered or failed delivery again (same id and body, fresh retries)',
      tags,
      params: [...params, 'id'],
      ok: { status: 202, description: 'Pending again', schema: Delivery },
      errors: [404, 409],
    }),
  },
  '/tenants/{tenant}/frequency-caps': {
    get: operation({
      summary: 'List frequency caps',
      tags: capTags,
      params: ['tenant'],
      ok: { status: 200, description: 'Caps', schema: z.object({ caps: z.array(Cap) }) },
      errors: [404],
    }),
    post: operation({
      summary: 'Create a frequency cap: at most N action deliveries per user per window, across journeys',
      description: `${CAP_RULE} A destination the tenant lacks is refused (400); a tenant has at most 50 caps (422).`,
      tags: capTags,
      params: ['tenant'],
      body: CreateCapBody,
      ok: { status: 201, description: 'Created', schema: Cap },
      errors: [404, 409, 422],
    }),
  },
  '/tenants/{tenant}/frequency-caps/{name}': {
    get: operation({
      summary: 'A frequency cap',
      tags: capTags,
      params: ['tenant', 'name'],
      ok: { status: 200, description: 'Cap', schema: Cap },
      errors: [404],
    }),
    patch: operation({
      summary: 'Change a frequency cap (maximum, window, destination, exemptions)',
      description: "A new window length starts the cap's counting afresh; a new maximum keeps what was counted.",
      tags: capTags,
      params: ['tenant', 'name'],
      body: UpdateCapBody,
      ok: { status: 200, description: 'Changed', schema: Cap },
      errors: [404],
    }),
    delete: operation({
      summary: 'Delete a frequency cap (what it skipped stays counted)',
      tags: capTags,
      params: ['tenant', 'name'],
      ok: { status: 204, description: 'Deleted' },
      errors: [404],
    }),
  },
  '/tenants/{tenant}/quiet-hours': {
    get: operation({
      summary: "The tenant's quiet hours",
      description: QUIET_RULE,
      tags: ['quiet hours'],
      params: ['tenant'],
      ok: { status: 200, description: 'The rule', schema: QuietHours },
      errors: [404],
    }),
    put: operation({
      summary: "Set the tenant's quiet hours (no action deliveries between start and end in each user's zone)",
      description: `${QUIET_RULE} A malformed HH:MM, equal start and end, or an unknown IANA zone is a 400 naming the field. Deliveries held already keep the opening they were given.`,
      tags: ['quiet hours'],
      params: ['tenant'],
      body: PutQuietHoursBody,
      ok: { status: 200, description: 'Replaced', schema: QuietHours },
      alsoOk: [{ status: 201, description: 'Set (the tenant had none)' }],
      errors: [404],
    }),
    delete: operation({
      summary: "Remove the tenant's quiet hours (deliveries held already are still sent when their window opens)",
      tags: ['quiet hours'],
      params: ['tenant'],
      ok: { status: 204, description: 'Removed' },
      errors: [404],
    }),
  },
};
