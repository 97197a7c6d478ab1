import { z } from 'zod';
import { operation } from '../openapi-kit';
import { PROCEDURE_STATES } from './types';

const LockKey = z.object({ key: z.string(), mode: z.enum(['shared', 'exclusive']) });
const Procedure = z.object({
  id: z.string(),
  type: z.string(),
  parentId: z.string().nullable(),
  tenantId: z.string().nullable(),
  workflowId: z.string().nullable(),
  lockKeys: z.array(LockKey),
  state: z.enum(PROCEDURE_STATES),
  step: z.number().int().describe('Steps committed so far (execute and rollback steps)'),
  data: z.unknown().describe('The JSON state persisted with the last step'),
  output: z.unknown().nullable(),
  error: z.string().nullable().describe('The failure that started the rollback or failed the procedure'),
  rollbackError: z.string().nullable().describe('The last failure of the rollback itself'),
  attempts: z.number().int().describe('Retries of the current step (or rollback step) so far; a failed procedure keeps the count it failed with'),
  nextAttemptAt: z.string().nullable().describe('When a retrying procedure runs its next attempt'),
  waitingSince: z
    .string()
    .nullable()
    .describe(
      'Since when the procedure has been waiting for a resource (e.g. partitions being taken over); it fails once the wait exceeds its documented limit',
    ),
  owner: z.string().nullable().describe('The process holding the procedure (and its locks)'),
  createdAt: z.string(),
  updatedAt: z.string(),
  finishedAt: z.string().nullable(),
});
const ProcedureDetail = Procedure.extend({
  steps: z.array(z.object({ step: z.number().int(), state: z.enum(PROCEDURE_STATES), at: z.string() })).describe('Committed steps, oldest first'),
  children: z.array(Procedure).describe('Child procedures (sub-procedures this one waited for), oldest first'),
});
const tags = ['procedures'];

export const paths: Record<string, object> = {
  '/procedures': {
    get: operation({
      summary: 'List procedures, newest first (a tenant key sees its tenant’s)',
      tags,
      query: {
        type: 'procedure type, e.g. instance.start',
        state: `one of ${PROCEDURE_STATES.join(', ')}`,
        workflow: 'workflow id',
        limit: '1–500, default 100',
      },
      ok: { status: 200, description: 'Procedures', schema: z.object({ procedures: z.array(Procedure) }) },
    }),
  },
  '/procedures/{id}': {
    get: operation({
      summary: 'Get a procedure; with wait=<seconds> (0–60) long-poll until it is done or failed or the wait elapses',
      tags,
      params: ['id'],
      query: { wait: 'seconds to wait for the procedure to finish, 0–60 (default 0)' },
      ok: { status: 200, description: 'The procedure (still unfinished if the wait elapsed), with its steps and children', schema: ProcedureDetail },
      errors: [404],
    }),
  },
  '/procedures/{id}/retry': {
    post: operation({
      summary: 'Retry a failed procedure from its last persisted step (failed children are retried too)',
      tags,
      params: ['id'],
      ok: { status: 200, description: 'The procedure, running again', schema: Procedure },
      errors: [404, 409],
    }),
  },
};
