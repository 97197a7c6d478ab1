import { z } from 'zod';
import { operation } from '../openapi-kit';
import { AUDIT_ACTIONS } from './audit';

const AuditEvent = z.object({
  seq: z.number().int(),
  at: z.string(),
  actor: z.string().describe('"admin:token", "admin:session:<session id>", "key:<key id>" or "anonymous" (failed sign-in)'),
  action: z.enum(AUDIT_ACTIONS),
  tenantId: z.string().nullable(),
  target: z.string().describe('The tenant name, key id, instance id, procedure id or session id acted on'),
  details: z.unknown().describe('What else the action recorded; sign-ins and failed ones: {address} of the client'),
});

export const paths: Record<string, object> = {
  '/sessions': {
    delete: operation({
      summary: 'End every studio session at once (admin): each signed-in browser must sign in again',
      tags: ['session'],
      ok: { status: 200, description: 'Ended', schema: z.object({ ended: z.number().int() }) },
      errors: [403],
    }),
  },
  '/audit': {
    get: operation({
      summary: 'The audit trail (admin): sign-ins, tenant and key changes, instance start/stop/updates, procedure retries, oldest first',
      tags: ['audit'],
      query: {
        tenantId: 'Only events of this tenant id',
        action: 'Only this action',
        after: 'Events after this seq (the `next` of the previous page)',
        limit: '1–1000, default 100',
      },
      ok: { status: 200, description: 'Events', schema: z.object({ events: z.array(AuditEvent), next: z.number().int() }) },
      errors: [403],
    }),
  },
};
