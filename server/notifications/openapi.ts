// The HTTP surface of notifications (app/api/v1/notifications, app/api/v1/consumers/**): OpenAPI 3.1 path items
// built from the schemas the routes validate with (./notifications.ts).
import { z } from 'zod';
import { operation } from '../openapi-kit';
import { CommitBody, CreateConsumerBody, INLINE_USERS_MAX, INLINE_USERS_PER_PAGE, MAX_PAGE, MAX_PAGE_BITMAP_BYTES } from './notifications';

const Notification = z.object({
  seq: z.number(),
  instanceId: z.string(),
  from: z.string().nullable(),
  to: z
    .string()
    .describe(
      "The step moved to, or `$exit`: the users met the workflow's exit criteria in `from` and left the journey (no action tags; `from` null: as they entered)",
    ),
  user: z.number().optional().describe('A single-user move'),
  users: z.array(z.number()).optional().describe(`A bulk move of at most ${INLINE_USERS_MAX} users (at most ${INLINE_USERS_PER_PAGE} listed IDs per page)`),
  bitmap: z
    .string()
    .optional()
    .describe(
      'A larger bulk move: base64 of the users as a portable-format roaring bitmap (run-optimized). Decode with any Roaring library: ' +
        'Node `roaring` `RoaringBitmap32.deserialize(Buffer.from(b, "base64"), "portable")`, Python ' +
        '`pyroaring.BitMap.deserialize(base64.b64decode(b))`, Java/Go `RoaringBitmap` `deserialize`/`ReadFrom`',
    ),
  count: z.number().describe('Users moved'),
  seqs: z
    .array(z.number())
    .optional()
    .describe(
      'Present when one bulk move was journaled per partition and merged here: the seqs of the merged entries (`seq` is the first); entries split by a page boundary arrive as separate items',
    ),
  leaveAction: z.string().nullable(),
  enterAction: z.string().nullable(),
  time: z.string(),
});

/** Moves with seq ≤ `through` that journal retention (docs/limits.md "Journal retention") deleted before this reader read them. */
const Lost = z.object({ through: z.number() }).describe('Moves with seq ≤ through were deleted by retention before they were read');
const Consumer = z.object({ name: z.string(), cursor: z.number(), lag: z.number(), updatedAt: z.string(), lost: Lost.nullable() });

const tenantQuery = { tenant: 'Tenant id or name (required with the admin token)' };

export const paths: Record<string, object> = {
  '/notifications': {
    get: operation({
      summary: 'Committed moves after a cursor, oldest first; send `next` as `after` to continue',
      description:
        `A page holds at most \`limit\` journal entries and stops early once their bitmaps reach ${MAX_PAGE_BITMAP_BYTES / 1024 / 1024} ` +
        `MiB (it always holds at least one entry), so read until \`items\` is empty rather than until a page is short. A bulk move ` +
        `journaled once per partition is merged into one item (\`seqs\`).`,
      tags: ['notifications'],
      query: { after: 'Cursor (a seq); 0 = from the oldest retained', limit: `Page size, default 100, at most ${MAX_PAGE}`, ...tenantQuery },
      ok: { status: 200, description: 'A page', schema: z.object({ items: z.array(Notification), next: z.number(), lost: Lost.optional() }) },
      errors: [404],
    }),
  },
  '/consumers': {
    get: operation({
      summary: 'List named consumers',
      tags: ['notifications'],
      query: tenantQuery,
      ok: { status: 200, description: 'Consumers', schema: z.object({ consumers: z.array(Consumer) }) },
      errors: [404],
    }),
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
    get: operation({
      summary: 'A consumer: cursor and lag (moves after the cursor)',
      tags: ['notifications'],
      params: ['name'],
      query: tenantQuery,
      ok: { status: 200, description: 'Consumer', schema: Consumer },
      errors: [404],
    }),
    delete: operation({
      summary: 'Delete a consumer',
      tags: ['notifications'],
      params: ['name'],
      query: tenantQuery,
      ok: { status: 204, description: 'Deleted' },
      errors: [404],
    }),
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
