// POST …/workflows/{id}/preview-path: the body (zod) and the answer's schema (OpenAPI). The walk itself is the
// engine's (server/engine/preview.ts), where the profile index and the crowds are.
import { z } from 'zod';
import { MAX_USER_ID } from '../crowd/bitmap';
import { MAX_EVENT_TYPE_LENGTH } from '../engine/ingest';
import { operation } from '../openapi-kit';
import { QUERY_DEADLINE_MS } from '../conditions/deadline';

/** At most this many events may be pretended in one preview. */
export const MAX_PREVIEW_EVENTS = 20;

export const PreviewPathBody = z.strictObject({
  user: z.number().int().min(0).max(MAX_USER_ID).describe('The user whose path is previewed (a uint32 id)'),
  events: z
    .array(
      z.strictObject({
        type: z.string().min(1).max(MAX_EVENT_TYPE_LENGTH).describe('The event type, as an integration would send it'),
        data: z.record(z.string(), z.unknown()).optional().describe('The event data conditions read as event.data.<field>'),
      }),
    )
    .max(MAX_PREVIEW_EVENTS)
    .optional()
    .describe(
      `Up to ${MAX_PREVIEW_EVENTS} events to pretend, in order, at the time of the preview: each is offered to the next step that waits for an event ` +
        '(steps waiting on time, delays, timers and timeouts, pass without using them). Nothing is sent or stored.',
    ),
});

const Hop = z.object({
  from: z.string(),
  to: z.string(),
  by: z
    .enum(['next', 'branch', 'ttl', 'timeout', 'split', 'delay', 'timer'])
    .describe(
      '`next`: a direct or parallel step moves on at once; `branch`: branch `branch` (0-based) holds for the user now, on pretended event `event` ' +
        '(0-based) when the step waits for events; `ttl`: the branch re-evaluated with no event after `after`; `timeout`: the timeout after `after` ' +
        '(no further event pretended); `split`: path `path` (0-based, `percent`), picked by the hash of the user; `delay`: after `after`; ' +
        '`timer`: when `cron` fires, its condition holding now',
    ),
  branch: z.number().int().optional(),
  event: z.number().int().optional(),
  condition: z.string().optional(),
  after: z.string().optional(),
  path: z.number().int().optional(),
  percent: z.number().optional(),
  cron: z.string().optional(),
});

const PathPreview = z.object({
  user: z.number(),
  workflowId: z.string(),
  version: z.number().int().describe("The version whose conditions were evaluated: the running instance's, else the newest saved"),
  instanceId: z.string().nullable().describe('The running instance the user was looked up in; null when none runs'),
  startsFrom: z.enum(['current', 'entry']).describe('`current`: from the step the user is in now; `entry`: as if the user entered now'),
  start: z.string(),
  hops: z.array(Hop),
  end: z.object({
    step: z.string(),
    reason: z
      .enum(['exit', 'exited', 'waits-for-event', 'waits-for-timer', 'loop', 'hop-limit'])
      .describe(
        '`exit`: the user leaves the journey at an exit step; `exited`: the exit criteria take the user out at `step` (on pretended event `event`, or now for criteria reading no event); `waits-for-event`: no branch holds and no event is left; `waits-for-timer`: the timer condition is false now; `loop`: the walk came back to a step with the same events left',
      ),
    cron: z.string().optional(),
    event: z.number().int().optional().describe('With `exited`: the pretended event (0-based) that met the exit criteria'),
  }),
  eventsUsed: z.number().int(),
  tooCostly: z.array(z.string()).describe('Conditions over the runtime cost budget for this user: taken as false'),
});

export const paths: Record<string, object> = {
  '/tenants/{tenant}/workflows/{id}/preview-path': {
    post: operation({
      summary:
        "Preview one user's path: the steps the user WOULD go through now, from their profile, the tenant's crowds and the workflow's conditions " +
        '(the running version, else the newest saved), from the step the user is in (else the entry step), with events pretended. Reads only: ' +
        'nobody moves, nothing is journaled. Needs the read scope.',
      description:
        'Conditions are evaluated as the engine evaluates them (stored conditions through the same gate; one over the runtime cost budget is false). ' +
        `The walk has a deadline of ${QUERY_DEADLINE_MS.toLocaleString('en-US')} ms (422 \`query_deadline\`).`,
      tags: ['workflows'],
      params: ['tenant', 'id'],
      body: PreviewPathBody,
      ok: { status: 200, description: 'The path', schema: PathPreview },
      errors: [404, 422, 503],
    }),
  },
};
