// The HTTP surface of paths and funnels (app/api/v1/tenants/{tenant}/instances/{iid}/paths and …/funnel): the zod
// schemas the routes validate with and the OpenAPI 3.1 path items built from them.
import { z } from 'zod';
import { operation } from '../openapi-kit';

/** Steps a funnel may name at most. */
export const MAX_FUNNEL_STEPS = 20;

const time = (what: string) => z.iso.datetime({ offset: true }).optional().describe(`${what} (RFC 3339 with a zone, e.g. 2026-12-05T09:00:00Z)`);

export const PathsQuery = z.strictObject({
  from: time("Start of the window, included; default: the instance's creation, or the start of the journal's retained range if later"),
  to: time('End of the window, excluded; default: now'),
});

export const FunnelQuery = PathsQuery.extend({
  steps: z
    .string()
    .transform((list) => list.split(',').map((step) => step.trim()))
    .pipe(z.array(z.string().min(1, 'a step name is empty')).min(2).max(MAX_FUNNEL_STEPS))
    .describe(`Comma-separated step names, in funnel order (2 to ${MAX_FUNNEL_STEPS}; a name may repeat); an unknown step is a 404`),
});

const Window = {
  instanceId: z.string(),
  from: z.string().describe('Start of the window read, included'),
  to: z.string().describe('End of the window read, excluded'),
  retainedFrom: z.string().nullable().describe('Where the journal still holds every move (null: retention never deleted any)'),
};

const Paths = z.object({
  ...Window,
  edges: z
    .array(
      z.object({
        from: z.string().nullable().describe('null: users entering the instance (its start, an entry trigger)'),
        to: z.string(),
        moves: z.number().describe('Moves along the edge in the window (a user taking it twice counts twice)'),
        users: z.number().describe('Distinct users who took it'),
      }),
    )
    .describe('Most moves first'),
});

const Funnel = z.object({
  ...Window,
  steps: z.array(
    z.object({
      step: z.string(),
      users: z.number().describe('Users who entered this step after entering every earlier step of the funnel, in order, within the window'),
      conversion: z.number().nullable().describe("users / the previous step's users (null for the first step, or when that had none)"),
      ofFirst: z.number().nullable().describe("users / the first step's users"),
    }),
  ),
});

const tags = ['instances'];
const params = ['tenant', 'iid'];
const windowQuery = {
  from: 'Start of the window (RFC 3339), included; a time before the journal’s retained range is a 422 `outside_retention` naming the range',
  to: 'End of the window (RFC 3339), excluded; default now',
};
const readsJournal =
  'Read from the journal (bulk and single moves), whose retention (tenant limit journalRetentionHours) bounds how far back a window may start. ' +
  'Users joining through a crowd replacement are not journaled.';

export const paths: Record<string, object> = {
  '/tenants/{tenant}/instances/{iid}/paths': {
    get: operation({
      summary: 'Paths: the moves along each edge between steps in a time window, and the distinct users who took it',
      description: readsJournal,
      tags,
      params,
      query: windowQuery,
      ok: { status: 200, description: 'The edges', schema: Paths },
      errors: [404, 422],
    }),
  },
  '/tenants/{tenant}/instances/{iid}/funnel': {
    get: operation({
      summary: 'Funnel: the users who entered the given steps in that order in a time window, with the conversion between each pair',
      description: `A user counts at a step once it entered every earlier step of the list before it, not necessarily one right after another. ${readsJournal}`,
      tags,
      params,
      requiredQuery: { steps: `Comma-separated step names in funnel order (2 to ${MAX_FUNNEL_STEPS}); an unknown step is a 404` },
      query: windowQuery,
      ok: { status: 200, description: 'The steps with their users', schema: Funnel },
      errors: [404, 422],
    }),
  },
};
