import { z } from 'zod';
import { NAME_KINDS, nameSchema } from './names';

// One workflow schema for canvas and server. The runnable definition holds only what the engine
// needs; canvas-only data (positions, labels) lives in the draft beside it.

export const StepName = nameSchema(NAME_KINDS.step);

/** `30s`, `5m`, `2h`, `7d`, `1h30m`, `500ms`. */
export const Duration = z.string().regex(/^(\d+(ms|s|m|h|d|w))+$/, 'Durations look like 30s, 5m, 2h, 7d or 1h30m');

export const ActionTag = z.string().trim().min(1).max(128);
export const ConditionText = z.string().trim().min(1, 'A condition cannot be empty').max(4096);

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
  // The counts are checked by validateWorkflow (a problem naming the step, not a schema error); meta puts them in
  // the OpenAPI schema so the document says what validation enforces.
  branches: z
    .array(z.strictObject({ condition: ConditionText, next: StepName }))
    .meta({ minItems: 1, description: 'At least 2 branches, or 1 with a timeout' }),
  timeout: z
    .strictObject({ after: Duration, next: StepName })
    .optional()
    .describe('Users no branch moved within `after` of entering the step move to `next` ("did they buy within 2d? if not, remind them")'),
});
export const TimerStep = z.strictObject({
  ...stepCommon,
  kind: z.literal('timer'),
  cron: z.string().trim().min(1),
  tz: z
    .string()
    .trim()
    .min(1)
    .max(64)
    .optional()
    .describe('IANA time zone the cron is evaluated in, e.g. "Europe/Amsterdam" (daylight saving included); UTC when absent'),
  condition: ConditionText.optional(),
  next: StepName,
});
export const DelayStep = z.strictObject({ ...stepCommon, kind: z.literal('delay'), after: Duration, next: StepName });
export const SplitStep = z.strictObject({
  ...stepCommon,
  kind: z.literal('split'),
  paths: z.array(z.strictObject({ percent: z.number().min(0).max(100), next: StepName })).meta({ minItems: 2, description: 'Percents sum to 100' }),
});
export const ParallelStep = z.strictObject({
  ...stepCommon,
  kind: z.literal('parallel'),
  actions: z.array(ActionTag).meta({ minItems: 1 }),
  next: StepName.optional(),
});

export const Step = z.discriminatedUnion('kind', [DirectStep, BranchStep, TimerStep, DelayStep, SplitStep, ParallelStep]);
export type Step = z.infer<typeof Step>;

export const WorkflowDefinition = z.strictObject({
  steps: z.array(Step).min(1, 'A workflow needs at least one step'),
  stopAt: z.iso.datetime({ offset: true }).optional(),
});
export type WorkflowDefinition = z.infer<typeof WorkflowDefinition>;

export const WorkflowDraft = z.strictObject({
  positions: z.record(z.string(), z.strictObject({ x: z.number(), y: z.number() })).default({}),
  labels: z.record(z.string(), z.string().max(200)).default({}),
  /** Notes the team leaves on steps (canvas only, like labels). */
  notes: z.record(z.string(), z.string().max(2000)).optional(),
});
export type WorkflowDraft = z.infer<typeof WorkflowDraft>;

/** What a schedule does about firings missed while no server ran (server/procedures/scheduler.ts). */
export const CATCH_UP_POLICIES = ['skip', 'latest'] as const;
export const DEFAULT_STARTING_DEADLINE_SECONDS = 3600;
export const WorkflowSchedule = z.strictObject({
  cron: z.string().trim().min(1),
  crowd: z.string().min(1),
  enabled: z.boolean().default(true),
  /** `skip`: missed firings are recorded as missed; `latest`: the latest missed one runs if still within the deadline. */
  catchUp: z.enum(CATCH_UP_POLICIES).default('skip'),
  /** With `latest`: how late (seconds after its time) a missed firing may still start (Kubernetes' startingDeadlineSeconds). */
  startingDeadlineSeconds: z.number().int().min(1).max(7 * 24 * 3600).default(DEFAULT_STARTING_DEADLINE_SECONDS),
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
