import { z } from 'zod';
import { MIN_PATH_USERS, WIN_PROBABILITY } from './experiment';
import { MAX_HOLDOUT_PERCENT } from './holdout';
import { MIN_OUTCOMES } from './lift';
import { DEFAULT_QUIET_ZONE_ATTRIBUTE, QUIET_MODES } from './quiet-hours';
import { NAME_KINDS, nameSchema } from './names';

// One workflow schema for canvas and server. The runnable definition holds only what the engine
// needs; canvas-only data (positions, labels) lives in the draft beside it.

export const StepName = nameSchema(NAME_KINDS.step);

/**
 * The longest duration a save accepts: a year and a day of waiting covers any journey (an anniversary included), and a
 * larger figure is a typo (`999999999w` would be a timer due after JavaScript's last date).
 */
export const MAX_DURATION = '366d';
export const MAX_DURATION_MS = 366 * 86_400_000;

/** `30s`, `5m`, `2h`, `7d`, `1h30m`, `500ms`. */
export const Duration = z
  .string()
  .regex(/^(\d+(ms|s|m|h|d|w))+$/, 'Durations look like 30s, 5m, 2h, 7d or 1h30m')
  .describe(
    `A duration: whole numbers with units ms, s, m, h, d (24 h), w (7 d), summed: \`30s\`, \`5m\`, \`2h\`, \`7d\`, \`1h30m\`, \`500ms\`; longer than 0 and at most ${MAX_DURATION}`,
  );

export const ActionTag = z.string().trim().min(1).max(128);

/** The condition language in the words of the OpenAPI document (docs/conditions.md says the same at more length). */
export const CONDITION_LANGUAGE = [
  'A CEL expression (https://cel.dev) that is true or false, at most 4,096 characters.',
  'Variables: `event.type` (string), `event.data.*` / `event.data["key"]` (the event\'s data; JSON numbers are doubles), ' +
    "`event.time` (timestamp); `profile.*` (the user's profile attributes, nested as `profile.address.country`); `user` (the user id, " +
    'an int); `now` (timestamp). A missing value (no event in a timer step or ttl re-evaluation, no profile, a missing field, a type ' +
    'mismatch) makes a comparison false, never an error.',
  'Functions: `inCrowd("name")` (the user is in the tenant\'s crowd of that name; a quoted literal; an unknown crowd is false and ' +
    'saved with a warning), `has(profile.x)`, `matches` (`event.data.sku.matches("^A-[0-9]+$")` or `matches(text, pattern)`: RE2 ' +
    'syntax, unanchored, linear time; lookaround and backreferences are refused), `timestamp("2026-01-01T00:00:00Z")`, ' +
    '`duration("168h")` (CEL durations: h, m, s, ms), `size()`, `startsWith()`, `endsWith()`, `contains()`, `int()`, `double()`, ' +
    '`string()`, comprehensions `exists`, `all`, `map`, `filter`.',
  'Operators: `==` `!=` `<` `<=` `>` `>=` `in` `&&` `||` `!` `+` `-` `*` `/` `%` and `? :`.',
  'Examples: `event.type == "purchase" && event.data.amount >= 100`; `inCrowd("vip") || profile.plan == "pro"`; ' +
    '`timestamp(profile.signup) < now - duration("720h")`; `event.data.email.matches("@example\\.com$")`.',
].join(' ');

/** A profile attribute path as conditions read it after `profile.`: keys joined by dots (`timezone`, `address.tz`). */
export const ProfileAttributePath = z
  .string()
  .trim()
  .max(256)
  // `profile.timezone` would silently name a nested `timezone` under an attribute called `profile`.
  .regex(
    /^(?!profile\.)[^.\s]+(\.[^.\s]+)*$/,
    'An attribute path is keys joined by dots, without the `profile.` prefix or spaces: e.g. timezone or address.tz',
  );

export const ConditionText = z.string().trim().min(1, 'A condition cannot be empty').max(4096).describe(CONDITION_LANGUAGE);

const stepCommon = {
  name: StepName,
  enterAction: ActionTag.optional(),
  leaveAction: ActionTag.optional(),
  ttl: Duration.optional(),
};

export const DirectStep = z.strictObject({ ...stepCommon, kind: z.literal('direct'), next: StepName.optional() });
export const BranchStep = z.strictObject({
  ...stepCommon,
  kind: z.literal('branch'),
  // The count is checked by validateWorkflow (a problem naming the step, not a schema error); meta puts it in the
  // OpenAPI schema so the document says what validation enforces.
  branches: z.array(z.strictObject({ condition: ConditionText, next: StepName })).meta({
    minItems: 1,
    description:
      'Tried in order on each event of a user in the step: the first whose condition holds moves the user to its `next`. No match: the ' +
      'user stays, with no move and no notification. A branch whose `next` is this step also leaves the user where they are (not ' +
      'journaled, not counted). When no condition of the step reads `event` (only `profile.*`, `inCrowd`, `user`, `now`), users are ' +
      'routed as they enter the step instead of at their next event (a start or any bulk move in: one bitmap plan per branch); those ' +
      'no branch takes stay, as above.',
  }),
  timeout: z
    .strictObject({ after: Duration, next: StepName })
    .optional()
    .describe('Users no branch moved within `after` of entering the step move to `next` ("did they buy within 2d? if not, remind them")'),
});
export const TimerStep = z.strictObject({
  ...stepCommon,
  kind: z.literal('timer'),
  cron: z
    .string()
    .trim()
    .min(1)
    .describe(
      'When users waiting here move on: a cron with SIX fields, seconds first: `second minute hour day-of-month month day-of-week` (`0 0 ' +
        '9 * * *` = 09:00:00 every day, `0 */15 * * * MON-FRI` = every 15 minutes on weekdays), or an alias (@daily, @hourly, @weekly, ' +
        '@monthly, @yearly, @weekdays, @weekends). A 5-field cron is refused, and so is a step larger than its field (`*/61` seconds). ' +
        'Evaluated in `tz` (UTC when absent). It may fire at most ' +
        "once per the tenant's minTimerPeriodSeconds (default 60).",
    ),
  tz: z
    .string()
    .trim()
    .min(1)
    .max(64)
    .optional()
    .describe(
      'IANA time zone the cron is evaluated in, e.g. "Europe/Amsterdam" (daylight saving included); UTC when absent. With `tzFromProfile`: the zone of users who have no valid zone of their own',
    ),
  tzFromProfile: ProfileAttributePath.optional().describe(
    "Local-time timer: the profile attribute holding each user's IANA time zone (a path without `profile.`: `timezone`, `address.tz`). " +
      'The cron then fires in each user\'s own zone ("09:00 wherever they are"): the step\'s users are grouped by zone with the profile ' +
      "index's equality bitmaps and each group moves, as one bulk move, when the cron fires in its zone. Users whose attribute is " +
      'missing, not a string or not a known zone use `tz` (UTC when absent)',
  ),
  condition: ConditionText.optional(),
  next: StepName,
});
export type TimerStep = z.infer<typeof TimerStep>;
export const DelayStep = z.strictObject({ ...stepCommon, kind: z.literal('delay'), after: Duration, next: StepName });
/** Who decided an experiment's winner: a person (the API or the studio), its date, or its significance (core/model/experiment.ts). */
export const WINNER_DECIDED_BY = ['manual', 'date', 'significance'] as const;

/** A split step run as an experiment over the journey's goal (core/model/experiment.ts: its figures and the winner rules). */
export const Experiment = z
  .strictObject({
    autoWinner: z
      .strictObject({
        after: z.iso
          .datetime({ offset: true })
          .optional()
          .describe('At this time (RFC 3339), the rest go to the path most likely best then, whatever the data says by then'),
        significance: z
          .boolean()
          .optional()
          .describe(
            `Once one path is best with probability ≥ ${WIN_PROBABILITY} and every path has at least ${MIN_PATH_USERS} users, ` +
              `${MIN_OUTCOMES} who converted and ${MIN_OUTCOMES} who did not, the rest go to it`,
          ),
      })
      .optional()
      .describe('Send the rest to the winner by itself (checked once a minute of the engine clock); at least one of after and significance'),
    winner: z
      .strictObject({
        path: StepName.describe('The winning path, named by the step it leads to'),
        at: z.iso.datetime({ offset: true }),
        by: z.enum(WINNER_DECIDED_BY),
      })
      .optional()
      .describe('Set by "send the rest to the winner" on the version it creates, whose split sends 100% down this path'),
  })
  .describe(
    "The split's paths are compared on the journey's goal (which it needs): the counts report each path's users, conversion rate with " +
      "a 95% Wilson interval, and the probability it is best. Paths are named by the step each leads to, so an experiment's paths lead to different steps.",
  );
export type Experiment = z.infer<typeof Experiment>;

/** A salt for the per-user hash of splits and holdouts (core/model/user-hash.ts), named to correlate them on purpose. */
const HashSeed = z.string().min(1).max(128);
export const SplitStep = z.strictObject({
  ...stepCommon,
  kind: z.literal('split'),
  seed: HashSeed.optional().describe(
    'Assignment is a hash of the user id, salted by default with the workflow id and step name: the same user always takes the same ' +
      'path in this workflow and all its versions, independently of other workflows. Splits given the same seed (in any workflow) put ' +
      'each user on the same path index, to correlate experiments on purpose.',
  ),
  paths: z.array(z.strictObject({ percent: z.number().min(0).max(100), next: StepName })).meta({ minItems: 2, description: 'Percents sum to 100' }),
  experiment: Experiment.optional(),
});
export const ParallelStep = z.strictObject({
  ...stepCommon,
  kind: z.literal('parallel'),
  actions: z.array(ActionTag).meta({ minItems: 1 }),
  next: StepName.optional(),
});

export const Step = z.discriminatedUnion('kind', [DirectStep, BranchStep, TimerStep, DelayStep, SplitStep, ParallelStep]);
export type Step = z.infer<typeof Step>;

/** Who may enter again: `once` (a user enters at most once), `again` (also after resting in an exit step). */
export const REENTRY_POLICIES = ['once', 'again'] as const;

/** Event-triggered entry: a user not in the instance enters its entry step (the first step) when a matching event arrives. */
export const EntryTrigger = z
  .strictObject({
    event: z.string().min(1).max(128).describe('The event type that lets a user in (types are at most 128 characters, like ingest)'),
    condition: ConditionText.optional().describe('CEL on the event (and profile); only events for which it holds let users in'),
    crowd: nameSchema(NAME_KINDS.crowd).optional().describe('Only users of this tenant crowd may enter'),
    reentry: z
      .enum(REENTRY_POLICIES)
      .default('once')
      .describe('`once`: a user enters at most once per instance; `again`: a user resting in an exit step (one with no next) enters again'),
  })
  .describe('Users enter when a matching event arrives (combinable with a start crowd, which then becomes optional)');
export type EntryTrigger = z.infer<typeof EntryTrigger>;

/** The workflow's goal: users for whom the condition holds on an event while in the instance are counted as converted. */
export const Goal = z
  .strictObject({ condition: ConditionText.describe('CEL on the event (and profile), e.g. event.type == "purchase"') })
  .describe('Users reaching the goal are counted as converted, per step they converted from (once per instance)');
export type Goal = z.infer<typeof Goal>;

/** A control group: a share of entering users who move through the journey but receive no action deliveries (core/model/holdout.ts). */
export const Holdout = z
  .strictObject({
    percent: z
      .number()
      .min(0)
      .max(MAX_HOLDOUT_PERCENT)
      .describe(`Share of entering users held out, 0 to ${MAX_HOLDOUT_PERCENT} (decimals allowed, e.g. 2.5); 0 holds out nobody`),
    seed: HashSeed.optional().describe(
      'Who is held out is a hash of the user id, salted by default with the workflow id: the same users in every version and instance ' +
        'of this journey. Journeys given the same seed hold out the same users (a shared control group).',
    ),
  })
  .describe(
    "Held-out users move through the journey like the others, but webhooks named by their steps' actions are not sent to them; " +
      "with a goal, the counts report both groups' conversion and the lift (`lift` in the counts). Fixed while an instance runs.",
  );

/**
 * Exit criteria: a user for whom the condition holds leaves the journey from whatever step they are in, counted there
 * as exited early (server/engine/exit.ts; docs/journeys.md "Exit criteria").
 */
export const Exit = z
  .strictObject({
    condition: ConditionText.describe(
      'CEL on the event (`event.type == "unsubscribe"`), checked on each event of a user in the journey before branches; or on ' +
        'profiles, crowds and `user` only (`inCrowd("churned")`, `profile.plan == "cancelled"`), then also checked, as one bitmap plan, ' +
        'for the users of every bulk move (a start, a crowd update, a delay, timeout or timer step moving users) and for every user ' +
        'still on the way at each timer firing. Users resting in an end step (no `next`) have finished: the criteria no longer apply to them',
    ),
  })
  .describe(
    'Exit criteria: a user who meets them leaves the journey at once from the step they are in, without the actions of any later step; ' +
      'counted per step in `exitedFrom`, exported with `users=exited`, journaled as a move to `$exit`. An exited user does not enter the ' +
      'same instance again (whatever `entry.reentry` says).',
  );
export type Exit = z.infer<typeof Exit>;

/**
 * Quiet hours (core/model/quiet-hours.ts): the tenant's rule (PUT /tenants/T/quiet-hours) and a journey's override.
 * The shape only: the times, their difference and the zone are checked by quietHoursProblems(), which names the field.
 */
export const QuietHoursRule = z
  .strictObject({
    start: z.string().max(20).describe('When quiet hours begin, HH:MM on a 24-hour clock in each user\'s zone, e.g. "21:00"'),
    end: z
      .string()
      .max(20)
      .describe('When they end (deliveries go again), HH:MM; before `start` the window spans midnight (21:00 to 08:00); never equal to `start`'),
    mode: z
      .enum(QUIET_MODES)
      .default('hold')
      .describe("`hold`: a delivery due inside the window is sent when it opens in that user's zone; `drop`: it is not sent at all"),
    zoneAttribute: ProfileAttributePath.default(DEFAULT_QUIET_ZONE_ATTRIBUTE).describe(
      "The profile attribute holding each user's IANA time zone, as local-time timers read it (a path without `profile.`)",
    ),
    defaultZone: z.string().max(64).default('UTC').describe('The zone of users whose attribute is missing or not a known IANA zone'),
  })
  .describe("No action deliveries between `start` and `end` in each user's own time zone (the users still move; only the delivery waits)");
export type QuietHoursRule = z.infer<typeof QuietHoursRule>;

export const WorkflowDefinition = z.strictObject({
  steps: z.array(Step).min(1, 'A workflow needs at least one step'),
  entry: EntryTrigger.optional(),
  goal: Goal.optional(),
  exit: Exit.optional(),
  holdout: Holdout.optional(),
  quietHours: z
    .union([QuietHoursRule, z.literal(false)])
    .optional()
    .describe("This journey's own quiet hours instead of the tenant's; `false`: none (transactional journeys); absent: the tenant's rule"),
  stopAt: z.iso.datetime({ offset: true }).optional(),
});
export type WorkflowDefinition = z.infer<typeof WorkflowDefinition>;

export const WorkflowDraft = z.strictObject({
  positions: z.record(z.string(), z.strictObject({ x: z.number(), y: z.number() })).default({}),
  labels: z.record(z.string(), z.string().max(200)).default({}),
  /** Notes the team leaves on steps (canvas only, like labels). */
  notes: z.record(z.string(), z.string().max(2000)).optional(),
  /** Names of a branch step's branches, in order ("Pro users"), drawn on their edges (canvas only, like labels). */
  branchLabels: z.record(z.string(), z.array(z.string().max(60))).optional(),
});
export type WorkflowDraft = z.infer<typeof WorkflowDraft>;

/** Whether users of the workflow's previous stopped instance may enter a new one ("exclude": they may not). */
export const REENTRY_MODES = ['exclude', 'allow'] as const;
export type Reentry = (typeof REENTRY_MODES)[number];

/** What a schedule does about firings missed while no server ran (server/procedures/scheduler.ts). */
export const CATCH_UP_POLICIES = ['skip', 'latest'] as const;
export const DEFAULT_STARTING_DEADLINE_SECONDS = 3600;
export const WorkflowSchedule = z.strictObject({
  cron: z.string().trim().min(1).describe('When the workflow starts: a six-field cron, seconds first (`0 0 6 * * MON` = Mondays 06:00:00 UTC), in UTC'),
  crowd: z.string().min(1),
  enabled: z.boolean().default(true),
  /** `skip`: missed firings are recorded as missed; `latest`: the latest missed one runs if still within the deadline. */
  catchUp: z.enum(CATCH_UP_POLICIES).default('skip'),
  /** With `latest`: how late (seconds after its time) a missed firing may still start (Kubernetes' startingDeadlineSeconds). */
  startingDeadlineSeconds: z
    .number()
    .int()
    .min(1)
    .max(7 * 24 * 3600)
    .default(DEFAULT_STARTING_DEADLINE_SECONDS),
  reentry: z
    .enum(REENTRY_MODES)
    .default('exclude')
    .describe(
      'The start option of each scheduled start (as on POST …/start): `exclude` (the default) leaves out users who were in the previous ' +
        'stopped instance of this workflow; `allow` lets every user of the crowd enter again. A firing that `exclude` leaves without users ' +
        'starts nothing and is recorded as skipped (output `{skipped: "nobody left", excludedCount}`).',
    ),
});
export type WorkflowSchedule = z.infer<typeof WorkflowSchedule>;

export const WorkflowName = nameSchema(NAME_KINDS.workflow);

export const CreateWorkflowBody = z.strictObject({
  name: WorkflowName,
  definition: WorkflowDefinition,
  draft: WorkflowDraft.optional(),
  schedule: WorkflowSchedule.nullable().optional(),
});
export const UpdateWorkflowBody = CreateWorkflowBody.partial();

/** A problem found by validateWorkflow(); `step` is null for problems of the workflow as a whole. */
export type WorkflowProblem = { step: string | null; code: string; message: string };

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

export function parseDuration(text: string): number {
  let total = 0;
  for (const [, amount, unit] of text.matchAll(/(\d+)(ms|s|m|h|d|w)/g)) total += Number(amount) * UNIT_MS[unit];
  return total;
}
