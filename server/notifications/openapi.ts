// The HTTP surface of notifications (app/api/v1/notifications, app/api/v1/consumers/**): OpenAPI 3.1 path items
// built from the schemas the routes validate with (./notifications.ts).
import { z } from 'zod';
import { operation } from '../http/openapi-kit';
import { CommitBody, CreateConsumerBody, INLINE_USERS_MAX, INLINE_USERS_PER_PAGE, MAX_PAGE } from './notifications';

const Notification = z.object({
  seq: z.number(),
  instanceId: z.string(),
  from: z.string().nullable(),
  to: z.string(),
  user: z.number().optional().describe('A single-user move'),
  users: z.array(z.number()).optional().describe(`A bulk move of at most ${INLINE_USERS_MAX} users (at most ${INLINE_USERS_PER_PAGE} listed IDs per page)`),
  bitmap: z.string().optional().describe('A larger bulk move: base64 of the portable roaring bitmap'),
  count: z.number(),
  leaveAction: z.string().nullable(),
  enterAction: z.string().nullable(),
  time: z.string(),
});

/** Moves with seq ≤ `through` that journal retention (README "Limits") deleted before this reader read them. */
const Lost = z.object({ through: z.number() }).describe('Moves with seq ≤ through were deleted by retention before they were read');
const Consumer = z.object({ name: z.string(), cursor: z.number(), lag: z.number(), updatedAt: z.string(), lost: Lost.nullable() });

const tenantQuery = { tenant: 'Tenant id or name (required with the admin token)' };

export const paths: Record<string, object> = {
  '/notifications': {
    get: operation({
      summary: 'Committed moves after a cursor, oldest first; send `next` as `after` to continue',
      tags: ['notifications'],
      query: { after: 'Cursor (a seq); 0 = from the oldest retained', limit: `Page size, default 100, at most ${MAX_PAGE}`, ...tenantQuery },
      ok: { status: 200, description: 'A page', schema: z.object({ items: z.array(Notification), next: z.number(), lost: Lost.optional() }) },
      errors: [404],
    }),
  },
  '/consumers': {
    get: operation({ summary: 'List named consumers', tags: ['notifications'], query: tenantQuery, ok: { status: 200, description: 'Consumers', schema: z.object({ consumers: z.array(Consumer) }) }, errors: [404] }),
  },
  '/consumers/{name}': {
    put: operation({
      summary: 'Create a named consumer at the tail, the head or a cursor (an existing one is returned unchanged, 200)',
      tags: ['notifications'],
      params: ['name'],
      query: tenantQuery,
      body: CreateConsumerBody,
      ok: { status: 201, description: 'Created', schema: Consumer },
      alsoOk: [{ status: 200, description: 'Updated (the consumer existed)' }],
      errors: [404],
    }),
    get: operation({ summary: 'A consumer: cursor and lag (moves after the cursor)', tags: ['notifications'], params: ['name'], query: tenantQuery, ok: { status: 200, description: 'Consumer', schema: Consumer }, errors: [404] }),
    delete: operation({ summary: 'Delete a consumer', tags: ['notifications'], params: ['name'], query: tenantQuery, ok: { status: 204, description: 'Deleted' }, errors: [404] }),
  },
  '/consumers/{name}/commit': {
    post: operation({
      summary: "Commit a consumer's cursor; commits never go backwards (409 naming both cursors)",
      tags: ['notifications'],
      params: ['name'],
      query: tenantQuery,
      body: CommitBody,
      ok: { status: 200, description: 'Committed', schema: Consumer },
      errors: [404, 409],
    }),
  },
};
