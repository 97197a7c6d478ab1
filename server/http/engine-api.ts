// The engine's HTTP surface (app/api/v1/events, …/instances/**, …/users/{user}, and starting a workflow): the zod
// schemas its routes validate with and the OpenAPI 3.1 path items documenting them, built from the same schemas.
// The engine itself (server/engine/) knows nothing of HTTP.
import { z } from 'zod';
import { DEDUPE_WINDOW_MS, MAX_EVENT_ID_LENGTH, MAX_EVENT_TYPE_LENGTH, MAX_EVENTS_PER_BATCH, MAX_HISTORY_POINTS, RECENT_ROWS, REENTRY_MODES } from '../engine';
import { MAX_USER_ID } from '../crowd/bitmap';
import { EXPORT_FORMATS, ExportQuery } from '../crowd/export';
import { EXPORT_COLUMNS_DESCRIPTION, EXPORT_COLUMNS_QUERY } from '../exports/openapi';
import { Crowd } from './crowd-openapi';
import { StepCrowdBody } from '../workflows/step-crowd';
import { ExperimentResultSchema } from './experiment-api';
import { operation } from '../openapi-kit';

/** GET …/events/types takes no query parameters; any is a 400 naming it. */
export const EventTypesQuery = z.strictObject({});

export const INSTANCE_STATES = ['starting', 'running', 'stopping', 'stopped', 'failed'] as const;

export const StartInstanceBody = z.strictObject({
  crowd: z
    .string()
    .min(1)
    .optional()
    .describe('Name of the tenant crowd the instance starts with; optional (users then enter only by events) when the workflow has an entry trigger'),
  version: z.number().int().min(1).optional().describe('Workflow version; the current one when omitted'),
  reentry: z
    .enum(REENTRY_MODES)
    .default('exclude')
    .describe(
      '`exclude` (the default): users who were in the previous stopped instance of this workflow (its snapshot, kept 7 days after the ' +
        'stop) are left out of this one and counted in `excludedCount`, here and when the crowd is replaced; `allow`: every user of the ' +
        'crowd enters. A start that would leave no user is refused with 422 (`details.excludedCount`).',
    ),
});

export const UpdateCrowdBody = z.strictObject({ crowd: z.string().min(1) });

export const UpdateWorkflowBody = z.strictObject({
  version: z.number().int().min(1),
  mapping: z
    .record(z.string().min(1), z.string().min(1))
    .optional()
    .describe('{removedStep: stepOfTheNewVersion} for users of steps the new version no longer has'),
});

export const CountsHistoryQuery = z.strictObject({
  from: z.iso.datetime({ offset: true }).optional().describe('Start (ISO 8601); default: 24 hours before `to`'),
  to: z.iso.datetime({ offset: true }).optional().describe('End (ISO 8601); default: now'),
  step: z.string().min(1).optional().describe('Comma-separated step names: only their counts (default: every step); an unknown step is a 404'),
  resolution: z.enum(['minute', 'hour', 'day']).default('minute').describe('One point per minute, hour or day: the last sample in it'),
});

export const InstancesQuery = z.strictObject({
  workflow: z.string().min(1).optional(),
  state: z.enum(INSTANCE_STATES).optional(),
});

/** `asOf`: an RFC 3339 time with seconds and a zone (`T` and `Z` in either case), as milliseconds since the epoch. */
const AsOf = z
  .string()
  .transform((text) => text.toUpperCase())
  .pipe(z.iso.datetime({ offset: true, error: 'expected an RFC 3339 time with seconds and a zone, e.g. 2026-12-01T09:30:00Z' }))
  .transform((text) => Date.parse(text));
const AS_OF_DESCRIPTION =
  'An RFC 3339 time (e.g. 2026-12-01T09:30:00Z): the answer as it was then, rebuilt from the checkpoints and the journal, crossing crowd updates (a running instance only; a time outside what it can answer, before its start, before the oldest move retention kept or before a crowd update made before their changes were recorded, is a 422 `outside_retention` whose details give `retainedFrom` and `retainedTo`)';

/** GET …/counts: live counts, or with `asOf` the counts at that moment. */
export const CountsQuery = z.strictObject({ asOf: AsOf.optional().describe(AS_OF_DESCRIPTION) });

/** A step export: `users=converted` exports the users who reached the workflow's goal from the step, `exited` those who left the journey from it by its exit criteria. */
export const StepExportQuery = ExportQuery.extend({
  asOf: AsOf.optional().describe(`${AS_OF_DESCRIPTION}; with users=in or exited only`),
  users: z
    .enum(['in', 'converted', 'exited', 'capped', 'quiet'])
    .default('in')
    .describe(
      '`in`: users in the step now; `converted`: users who reached the goal from the step (422 when the workflow has no goal); `exited`: users who met the exit criteria in the step and left the journey early (422 when the workflow has none); `capped`: users a frequency cap skipped a delivery of at the step; `quiet`: users whose delivery at the step waits for quiet hours to end',
    ),
  group: z
    .enum(['holdout', 'treatment'])
    .optional()
    .describe(
      'With a holdout: only the held-out users of `in`, `converted` or `exited` (`holdout`), or only the others (`treatment`); 422 when the journey holds out nobody, 400 with `users=capped`',
    ),
}).refine((query) => !(query.group && (query.users === 'capped' || query.users === 'quiet')), {
  message: 'group: not with users=capped or users=quiet (held-out users get no deliveries, so none is capped or waits)',
  path: ['group'],
});

export const UserParams = z.object({
  user: z
    .string()
    .regex(/^\d{1,10}$/, `expected a user id from 0 to ${MAX_USER_ID}`)
    .transform(Number)
    .refine((user) => user <= MAX_USER_ID, `expected a user id from 0 to ${MAX_USER_ID}`),
});

const Instance = z.object({
  id: z.string(),
  tenantId: z.string(),
  workflowId: z.string(),
  version: z.number(),
  crowdName: z.string().describe('The start crowd; empty for an instance started without one (entry by events only)'),
  state: z.enum(INSTANCE_STATES),
  userCount: z.number(),
  excludedCount: z.number().describe('Users of the crowd left out because they were in the previous instance (reentry "exclude")'),
  reentry: z.enum(REENTRY_MODES),
  createdAt: z.string(),
  startedAt: z.string().nullable(),
  stoppedAt: z.string().nullable(),
});
const GroupConversion = z.object({
  users: z.number().describe('Entries into the instance of this group'),
  converted: z.number().describe('Users of this group who reached the goal'),
  rate: z.number().nullable().describe('converted / users; null while the group is empty'),
});
const LiftSchema = z.object({
  treatment: GroupConversion,
  holdout: GroupConversion,
  absolute: z.number().nullable().describe('Treatment rate − holdout rate (0.02 = 2 points); null while a group is empty'),
  relative: z.number().nullable().describe('absolute / holdout rate (0.25 = 25% more); null while the holdout converted nobody'),
  interval: z
    .object({ low: z.number(), high: z.number() })
    .nullable()
    .describe('95% confidence interval of `absolute`: ± 1.96 unpooled standard errors, sqrt(p1(1−p1)/n1 + p2(1−p2)/n2)'),
  z: z.number().nullable().describe('Two-proportion z statistic with the pooled standard error; null when nobody or everybody converted'),
  pValue: z.number().nullable().describe('Two-sided p-value of `z`'),
  enoughData: z.boolean().describe('Each group has at least 5 users who converted and 5 who did not (the normal approximation holds); otherwise no verdict'),
  significant: z.boolean().describe('enoughData and pValue < 0.05'),
});
const Counts = z.object({
  instanceId: z.string(),
  total: z.number(),
  entered: z.number().describe('Users who entered the instance: the start crowd, crowd updates and event-triggered entries (a re-entry counts again)'),
  converted: z.number().optional().describe('With a goal: users who reached it (once per instance each)'),
  convertedFrom: z.record(z.string(), z.number()).optional().describe('With a goal: users who reached it, by the step they were in when they did'),
  exited: z.number().optional().describe('With exit criteria: users who met them and left the journey early (each once: they do not enter the instance again)'),
  exitedFrom: z
    .record(z.string(), z.number())
    .optional()
    .describe('With exit criteria: users who left the journey early, by the step they were in when they met the criteria (every step, 0 when none)'),
  steps: z.record(z.string(), z.number()).describe('Users currently in each step'),
  edges: z.record(z.string(), z.number()).describe('Users who took each edge, keyed "from->to"'),
  capped: z
    .record(z.string(), z.object({ users: z.number().describe('Users capped here (each once)'), skipped: z.number().describe('Deliveries skipped') }))
    .optional()
    .describe('Per step whose enter-action deliveries a frequency cap skipped (the users still moved); absent when none was'),
  quiet: z
    .record(
      z.string(),
      z.object({
        waiting: z.number().describe('Users whose delivery waits for quiet hours to end in their zone (each once)'),
        dropped: z.number().describe('Deliveries quiet hours dropped (rules with mode "drop")'),
      }),
    )
    .optional()
    .describe('Per step whose enter-action deliveries quiet hours hold or dropped (the users still moved); absent when none'),
  holdout: z
    .object({
      entered: z.number().describe('Entries of held-out users (counted as `entered` is); the rest of `entered` is the treated group'),
      converted: z.number().optional().describe('With a goal: held-out users who reached it (also counted in `converted`)'),
    })
    .optional()
    .describe("With a holdout: the control group, who move through the journey but get none of its steps' webhook deliveries"),
  lift: LiftSchema.optional().describe("With a holdout and a goal: both groups' conversion and the measured lift"),
  experiments: z
    .record(z.string(), ExperimentResultSchema)
    .optional()
    .describe("With a goal, per split step run as an experiment: each path's users, conversion rate, 95% interval and probability of being best"),
});
const CountsPoint = z.object({
  at: z.string().describe('Start of the minute, hour or day'),
  total: z.number(),
  entered: z.number(),
  converted: z.number().optional(),
  convertedFrom: z.record(z.string(), z.number()).optional(),
  steps: z.record(z.string(), z.number()),
});
const CountsHistory = z.object({
  instanceId: z.string(),
  resolution: z.enum(['minute', 'hour', 'day']),
  from: z.string(),
  to: z.string(),
  points: z.array(CountsPoint),
});
const Submitted = z.object({ procedureId: z.string(), instanceId: z.string() });
const Snapshot = z.object({
  instanceId: z.string(),
  workflowId: z.string(),
  version: z.number(),
  counts: Counts,
  createdAt: z.string(),
  expiresAt: z.string(),
  exports: z.record(z.string(), z.string()).describe('Per step: the path that exports its users at stop time'),
});
const WhereIsUser = z.object({
  user: z.number(),
  instances: z.array(z.object({ instanceId: z.string(), workflowId: z.string(), step: z.string() })),
  recentMoves: z.array(z.object({ seq: z.number(), instanceId: z.string(), fromStep: z.string().nullable(), toStep: z.string(), time: z.string() })),
  recentMovesComplete: z.boolean().describe('False when the search for bulk moves stopped at its limit before the end of the journal'),
  recentMovesSearchedBackTo: z.number().optional().describe('With recentMovesComplete false: bulk moves with this seq or older were not searched'),
});
const EventsBody = z.object({
  tenant: z.string().optional().describe('Tenant id or name; required with the admin token, optional with a tenant API key'),
  events: z
    .array(
      z.strictObject({
        id: z
          .string()
          .min(1)
          .max(MAX_EVENT_ID_LENGTH)
          .optional()
          .describe(
            `Optional event id, unique per tenant (like Segment's messageId): an event whose id the log already holds from the last ` +
              `${DEDUPE_WINDOW_MS / 3_600_000} hours is not appended again, and counts in \`duplicates\``,
          ),
        user: z.number().int().min(0).max(MAX_USER_ID),
        type: z.string().min(1).max(MAX_EVENT_TYPE_LENGTH),
        data: z.record(z.string(), z.unknown()).optional(),
        time: z
          .union([z.string(), z.number().int().min(0)])
          .optional()
          .describe('ISO-8601 with a time zone, or epoch milliseconds; default now'),
      }),
    )
    .min(1)
    .max(MAX_EVENTS_PER_BATCH),
});

const tags = ['instances'];
const instance = ['tenant', 'iid'];

export const paths: Record<string, object> = {
  '/tenants/{tenant}/workflows/{id}/start': {
    post: operation({
      summary:
        'Start an instance of a workflow over a crowd, or without one when the workflow has an entry trigger (refused: empty crowd or no ' +
        'user left after re-entry exclusion 422, no crowd and no trigger 400, invalid workflow, already running 409)',
      tags,
      params: ['tenant', 'id'],
      body: StartInstanceBody,
      ok: { status: 202, description: 'Start submitted as a procedure', schema: Submitted },
      errors: [404, 409, 422],
    }),
  },
  '/tenants/{tenant}/instances': {
    get: operation({
      summary: 'List instances',
      tags,
      params: ['tenant'],
      query: { workflow: 'Workflow id or name (404 when the tenant has no such workflow)', state: INSTANCE_STATES.join(' | ') },
      ok: { status: 200, description: 'Instances', schema: z.object({ instances: z.array(Instance) }) },
      errors: [404],
    }),
  },
  '/tenants/{tenant}/instances/{iid}': {
    get: operation({ summary: 'Get an instance', tags, params: instance, ok: { status: 200, description: 'Instance', schema: Instance }, errors: [404] }),
  },
  '/tenants/{tenant}/instances/{iid}/stop': {
    post: operation({
      summary: 'Stop an instance (saves a history snapshot)',
      tags,
      params: instance,
      ok: { status: 202, description: 'Stop submitted', schema: Submitted },
      errors: [404, 409],
    }),
  },
  '/tenants/{tenant}/instances/{iid}/crowd': {
    post: operation({
      summary: 'Replace the crowd of a running instance: new users join the entry step, departed users leave (no notifications)',
      tags,
      params: instance,
      body: UpdateCrowdBody,
      ok: { status: 202, description: 'Update submitted', schema: Submitted },
      errors: [404, 409],
    }),
  },
  '/tenants/{tenant}/instances/{iid}/workflow': {
    post: operation({
      summary: 'Move a running instance to another workflow version; users of removed steps must be mapped (409 with details.stranded otherwise)',
      tags,
      params: instance,
      body: UpdateWorkflowBody,
      ok: { status: 202, description: 'Update submitted', schema: Submitted },
      errors: [404, 409],
    }),
  },
  '/tenants/{tenant}/instances/{iid}/counts': {
    get: operation({
      summary: 'Per-step and per-edge user counts',
      description:
        'In a cluster any member answers, adding the counts the owners of its other partitions published; a 503 `partition_moving` (retry ' +
        'shortly) while a partition between owners has no committed figure yet, never a partial count; a 503 `partition_recovering` with ' +
        "`Retry-After` while the tenant's partitions load after a restart. With `asOf`: the counts at that moment, with `asOf` in " +
        'the answer and without `converted`/`convertedFrom` (conversions are not journaled); `edges`, `entered` and `exited`/`exitedFrom` ' +
        '(exits are journaled) are totals up to then.',
      tags,
      params: instance,
      query: { asOf: AS_OF_DESCRIPTION },
      ok: { status: 200, description: 'Counts', schema: Counts.extend({ asOf: z.string().optional().describe('The moment answered, when asked') }) },
      errors: [400, 404, 422, 503],
    }),
  },
  '/tenants/{tenant}/instances/{iid}/counts/history': {
    get: operation({
      summary: `Per-step counts over time: sampled once a minute while the instance runs (minute samples kept 2 days, then one an hour for 90 days); at most ${MAX_HISTORY_POINTS} points`,
      tags,
      params: instance,
      query: {
        from: 'Start (ISO 8601); default: 24 hours before `to`',
        to: 'End (ISO 8601); default: now',
        step: 'Comma-separated step names: only their counts (a name that is no step of the instance, in any of its versions, is a 404)',
        resolution: 'minute (default) | hour | day: one point per bucket, its last sample',
      },
      ok: { status: 200, description: 'The points, oldest first', schema: CountsHistory },
      errors: [404],
    }),
  },
  '/tenants/{tenant}/instances/{iid}/counts/stream': {
    get: operation({
      summary: 'Server-Sent Events: `event: counts` with the counts JSON at once and on every change; a `: heartbeat` comment every 15 s',
      tags,
      params: instance,
      ok: { status: 200, description: 'Event stream', contentType: 'text/event-stream' },
      errors: [404],
    }),
  },
  '/tenants/{tenant}/instances/{iid}/steps/{step}/export': {
    get: operation({
      summary:
        'Export the users at a step, or who reached the goal from it (a stopped instance: at stop time): csv (one ID a line), json (array), portable roaring or parquet, with profile columns if asked',
      description: EXPORT_COLUMNS_DESCRIPTION,
      tags,
      params: [...instance, 'step'],
      query: {
        format: EXPORT_FORMATS.join(' | '),
        limit: 'At most this many IDs (the smallest)',
        columns: EXPORT_COLUMNS_QUERY,
        asOf: `${AS_OF_DESCRIPTION}; with users=in or exited only`,
        users:
          'in (default: users in the step now) | converted (users who reached the goal from the step; a 422 `unprocessable` when the ' +
          "instance's workflow version has no goal) | exited (users who met the exit criteria in the step and left the journey early; a 422 " +
          '`unprocessable` when the version has no exit criteria) | capped (users a frequency cap skipped a delivery of at the step, each once) | quiet ' +
          '(users whose delivery at the step waits for quiet hours to end, each once)',
        group:
          'holdout (only the held-out users of `users`) | treatment (only the others); a 422 `unprocessable` when the journey holds out ' +
          'nobody, a 400 with users=capped or users=quiet',
      },
      ok: {
        status: 200,
        description:
          'The IDs; header x-crowdflow-count holds how many, content-disposition names the file journey-step[-converted|-exited]-YYYY-MM-DD (slugs, UTC day)',
        contentType: 'text/csv',
      },
      errors: [400, 404, 422, 503],
    }),
  },
  '/tenants/{tenant}/instances/{iid}/steps/{step}/crowd': {
    post: operation({
      summary: 'Save the users at a step (or those who converted from it) as a new crowd, for re-targeting',
      description:
        "A copy of the step's bitmap (a stopped instance: at stop time), stored as a crowd like an upload: the same name rules and " +
        'per-tenant user limit; 409 `conflict` when the tenant has a crowd of that name; 422 `unprocessable` for `users: converted` ' +
        "when the instance's workflow version has no goal.",
      tags,
      params: [...instance, 'step'],
      body: StepCrowdBody,
      ok: { status: 201, description: 'The new crowd', schema: Crowd },
      errors: [404, 409, 422, 503],
    }),
  },
  '/tenants/{tenant}/instances/{iid}/snapshot': {
    get: operation({
      summary: 'History of a stopped instance: counts at stop and per-step exports',
      tags,
      params: instance,
      ok: { status: 200, description: 'Snapshot', schema: Snapshot },
      errors: [404],
    }),
  },
  '/tenants/{tenant}/users/{user}': {
    get: operation({
      summary: "Where is user U: the user's step in each running instance and its recent moves of every kind",
      description:
        '`recentMoves`: the newest 50 moves of the user, newest first: moves its own events caused, and the bulk moves it was part of ' +
        '(entering an instance at its start, delays, branch timeouts, ttl re-evaluation, timer steps, workflow version mappings; ' +
        '`fromStep` is null for the entry). Bulk moves are searched newest first, up to 10,000 bulk journal rows (or 64 MiB of their bitmaps) ' +
        "of the user's partition: when the search stops there before the end, `recentMovesComplete` is false and `recentMovesSearchedBackTo` " +
        'says how far back it read. Moves the journal retention removed are gone. Users joining through a crowd replacement are not journaled, so they have no entry move.',
      tags,
      params: ['tenant', 'user'],
      ok: { status: 200, description: 'Where the user is', schema: WhereIsUser },
      errors: [404, 503],
    }),
  },
  '/events': {
    post: operation({
      summary: `Append up to ${MAX_EVENTS_PER_BATCH} events durably to the tenant's partitioned log; a bad batch is refused whole with a 400 naming the first bad index`,
      tags: ['events'],
      description: [
        'Retrying is safe. Send an `Idempotency-Key` header with every batch (any 1–255 visible ASCII characters, e.g. a UUID) and resend a batch',
        'with the same key whenever no 202 came back: a key the tenant used in the last 24 hours for the same body (byte for byte: resend the bytes you sent) appends nothing and is',
        'answered as the first time (same status and counts, header `Idempotent-Replayed: true`); the same key with other body bytes is a 422',
        '`idempotency_key_reused`. Independently, an event `id` already logged within 24 hours is skipped and counted in `duplicates`.',
        'The dedupe record is committed in the same transaction as the events, so no crash can lose an acknowledged batch or log one twice.',
        'A key or id is remembered for at least 24 hours (expired ones are removed within 10 minutes after that).',
      ].join(' '),
      headers: { 'Idempotency-Key': 'Makes a retried request safe: 1–255 visible ASCII characters, unique per batch, remembered 24 hours per tenant' },
      body: EventsBody,
      ok: {
        status: 202,
        description: 'The events are durable (or were, for a replayed key)',
        schema: z.object({
          accepted: z.number().describe('Events of this request now in the log'),
          duplicates: z.number().optional().describe('Of those, events skipped because their id was already logged (present when > 0)'),
        }),
      },
      errors: [404, 413, 415, 422, 503],
    }),
  },
  '/tenants/{tenant}/events/types': {
    get: operation({
      summary:
        `The event types the tenant sent recently, most events first (for choosers such as the studio's rule builder): read from the ` +
        `newest ${RECENT_ROWS} rows of its input log, which keeps about the last hour of events`,
      tags: ['events'],
      params: ['tenant'],
      ok: {
        status: 200,
        description: 'Event types with their number of events among those read',
        schema: z.object({
          types: z.array(z.object({ type: z.string(), events: z.number() })),
          events: z.number().describe('Events read'),
          rows: z.number().describe('Log rows read (one per ingested batch and partition)'),
          since: z.string().nullable().describe('When the oldest row read was appended; null when the log is empty'),
        }),
      },
      errors: [404],
    }),
  },
};
