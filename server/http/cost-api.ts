// The HTTP surface of bounded cost: dead letters (events set aside by the runtime cost budget) and per-tenant limits.
import { z } from 'zod';
import { operation } from '../openapi-kit';
import { TenantLimits, TenantLimitsPatch } from '../limits/limits';

export const DeadLettersQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(1_000).default(100),
  after: z
    .string()
    .regex(/^dl_[0-9a-z]+$/, 'expected a dead letter id (dl_…)')
    .optional(),
});

const DeadLetter = z.object({
  id: z.string(),
  instanceId: z.string(),
  step: z.string(),
  partition: z.number(),
  logOffset: z.number(),
  eventIndex: z.number(),
  reason: z.string(),
  createdAt: z.string(),
  event: z.object({ user: z.number(), type: z.string(), data: z.record(z.string(), z.unknown()), time: z.string() }),
});

const deadLetters = ['dead-letters'];

export const paths = {
  '/tenants/{tenant}/dead-letters': {
    get: operation({
      summary:
        "Events set aside because a condition's evaluation exceeded the runtime cost budget (or failed), oldest first, with the reason; the partition moved past them and the user stayed in the step",
      tags: deadLetters,
      params: ['tenant'],
      query: { limit: 'Page size, default 100, at most 1000', after: 'Id of the last dead letter of the previous page (`next`)' },
      ok: { status: 200, description: 'A page', schema: z.object({ deadLetters: z.array(DeadLetter), next: z.string().nullable() }) },
      errors: [404],
    }),
  },
  '/tenants/{tenant}/dead-letters/{id}': {
    get: operation({
      summary: 'One dead letter: the event, where it was in the log, the instance, the step and why',
      tags: deadLetters,
      params: ['tenant', 'id'],
      ok: { status: 200, description: 'Dead letter', schema: DeadLetter },
      errors: [404],
    }),
    delete: operation({
      summary: 'Discard a dead letter',
      tags: deadLetters,
      params: ['tenant', 'id'],
      ok: { status: 204, description: 'Discarded' },
      errors: [404],
    }),
  },
  '/tenants/{tenant}/limits': {
    get: operation({
      summary: 'The tenant\'s limits (defaults in docs/limits.md "Per-tenant limits", with this tenant\'s overrides)',
      tags: ['tenants'],
      params: ['tenant'],
      ok: { status: 200, description: 'Limits', schema: TenantLimits },
      errors: [404],
    }),
    put: operation({
      summary: 'Override limits of a tenant (admin token only); null puts a limit back to its default',
      tags: ['tenants'],
      params: ['tenant'],
      body: TenantLimitsPatch,
      ok: { status: 200, description: 'The limits now in force', schema: TenantLimits },
      errors: [403, 404],
    }),
  },
};
