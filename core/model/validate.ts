import type { z } from 'zod';
import { celCompileProblem, celCostProblem, celSyntaxProblem } from '../conditions/parse';
import { branchRouting } from './branch-routing';
import { experimentProblems } from './experiment';
import { MAX_HOLDOUT_PERCENT } from './holdout';
import { quietHoursProblems } from './quiet-hours';
import { cronProblem, timeZoneProblem } from './cron';
import {
  ConditionText,
  Duration,
  MAX_DURATION,
  MAX_DURATION_MS,
  parseDuration,
  QuietHoursRule,
  WorkflowDefinition,
  WorkflowSchedule,
  type WorkflowProblem,
} from './workflow';

// validateWorkflow() is shared by the canvas and the server, so it stays pure: no node: imports, no db.
// It reports every problem at once. Shape problems (zod) come first, each tied to the step it is in;
// the graph and content rules then run over whatever each step got right, so a step with one wrong
// field still has its other fields (and its `next` targets) checked.

export type ProblemCode =
  | 'invalid_field'
  | 'duplicate_step'
  | 'unknown_next'
  | 'too_few_branches'
  | 'too_few_paths'
  | 'no_actions'
  | 'percent_sum'
  | 'bad_cron'
  | 'bad_time_zone'
  | 'bad_duration'
  | 'bad_condition'
  | 'condition_too_costly'
  | 'timer_too_frequent'
  | 'bad_stop_at'
  | 'bad_holdout'
  | 'bad_experiment'
  | 'bad_quiet_hours'
  | 'instant_cycle'
  | 'unreachable'
  | 'too_many_steps';

export type ValidationResult = { ok: true; definition: WorkflowDefinition } | { ok: false; problems: WorkflowProblem[] };

export type ValidateOptions = {
  /**
   * Saves pass it; stored versions are checked without it. When given, a `stopAt` at or before this time (epoch ms) is
   * a problem, and so are the save-time rules for conditions (RE2 patterns, the cost budget).
   */
  now?: number;
};

/** Far above any journey a marketer draws; keeps validation (and the canvas) fast on hostile input. */
export const MAX_STEPS = 1000;

/** Steps that move entering users on within the same transaction: a cycle made only of these never ends. */
const INSTANT_KINDS: ReadonlySet<string> = new Set(['direct', 'parallel', 'split']);

/** What the rules need from one step, taken from the raw input wherever the field has the right type. */
type LooseStep = {
  label: string;
  name?: string;
  kind?: string;
  targets: { next: string; where: string }[];
  branches?: unknown[];
  paths?: unknown[];
  percents: (number | undefined)[];
  actions?: unknown[];
  durations: { field: string; value: string }[];
  conditions: { field: string; value: string }[];
  cron?: string;
  tz?: string;
};

export function validateWorkflow(definition: unknown, options: ValidateOptions = {}): ValidationResult {
  const problems: WorkflowProblem[] = [];
  const rawSteps = isRecord(definition) && Array.isArray(definition.steps) ? definition.steps : [];
  if (rawSteps.length > MAX_STEPS) {
    return { ok: false, problems: [{ step: null, code: 'too_many_steps', message: `Workflow has ${rawSteps.length} steps; the limit is ${MAX_STEPS}` }] };
  }
  const steps = rawSteps.map(looseStep);

  const shape = WorkflowDefinition.safeParse(definition);
  if (!shape.success) problems.push(...shape.error.issues.filter((issue) => !checkedBelow(issue)).map((issue) => shapeProblem(issue, steps)));

  problems.push(...duplicateNames(steps));
  const names = new Set(steps.flatMap((s) => (s.name === undefined ? [] : [s.name])));
  for (const step of steps) problems.push(...stepProblems(step, names, options.now !== undefined));
  problems.push(...instantCycles(steps, options.now !== undefined));
  problems.push(...unreachable(steps));
  if (isRecord(definition)) {
    const saving = options.now !== undefined;
    problems.push(
      ...stopAtProblems(definition.stopAt, options),
      ...workflowConditionProblems('entry', definition.entry, saving),
      ...workflowConditionProblems('goal', definition.goal, saving),
      ...workflowConditionProblems('exit', definition.exit, saving),
      ...holdoutProblems(definition.holdout),
      ...experimentProblems(definition),
      ...journeyQuietHoursProblems(definition.quietHours),
    );
  }

  return problems.length === 0 && shape.success ? { ok: true, definition: shape.data } : { ok: false, problems: distinct(problems) };
}

/** Two steps sharing a name can raise the same problem twice; say it once. */
function distinct(problems: WorkflowProblem[]): WorkflowProblem[] {
  const seen = new Set<string>();
  return problems.filter((p) => {
    const key = `${p.step}\u0000${p.code}\u0000${p.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** Problems of a workflow's start schedule (step null: they belong to the workflow, not a step). */
export function validateSchedule(schedule: unknown): WorkflowProblem[] {
  const shape = WorkflowSchedule.safeParse(schedule);
  if (!shape.success) {
    return shape.error.issues.map((issue) => ({
      step: null,
      code: 'invalid_field',
      message: `Schedule ${issue.path.length ? issue.path.join('.') : ''}: ${issue.message}`.replace(' :', ':'),
    }));
  }
  const problem = cronProblem(shape.data.cron);
  return problem ? [{ step: null, code: 'bad_cron', message: `Schedule cron ${problem}` }] : [];
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const stringAt = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

function looseStep(raw: unknown, index: number): LooseStep {
  const step = isRecord(raw) ? raw : {};
  const name = stringAt(step.name);
  const kind = stringAt(step.kind);
  const targets: LooseStep['targets'] = [];
  const conditions: LooseStep['conditions'] = [];
  const percents: LooseStep['percents'] = [];
  const branches = Array.isArray(step.branches) ? step.branches : undefined;
  const paths = Array.isArray(step.paths) ? step.paths : undefined;
  const next = stringAt(step.next);
  if (next !== undefined) targets.push({ next, where: 'next' });
  branches?.forEach((branch, i) => {
    const item = isRecord(branch) ? branch : {};
    const target = stringAt(item.next);
    if (target !== undefined) targets.push({ next: target, where: `branches[${i}].next` });
    const condition = stringAt(item.condition);
    if (condition !== undefined && kind === 'branch') conditions.push({ field: `branches[${i}].condition`, value: condition });
  });
  paths?.forEach((path, i) => {
    const item = isRecord(path) ? path : {};
    const target = stringAt(item.next);
    if (target !== undefined) targets.push({ next: target, where: `paths[${i}].next` });
    percents.push(typeof item.percent === 'number' && Number.isFinite(item.percent) ? item.percent : undefined);
  });
  const timeout = kind === 'branch' && isRecord(step.timeout) ? step.timeout : undefined;
  const timeoutNext = stringAt(timeout?.next);
  if (timeoutNext !== undefined) targets.push({ next: timeoutNext, where: 'timeout.next' });
  // Content is checked only where the kind has the field; a stray field is already an unrecognized key.
  const condition = stringAt(step.condition);
  if (condition !== undefined && kind === 'timer') conditions.push({ field: 'condition', value: condition });
  const durationFields = kind === 'delay' ? (['after', 'ttl'] as const) : (['ttl'] as const);
  const durations = durationFields.flatMap((field) => {
    const value = stringAt(step[field]);
    return value === undefined ? [] : [{ field: field as string, value }];
  });
  const timeoutAfter = stringAt(timeout?.after);
  if (timeoutAfter !== undefined) durations.push({ field: 'timeout.after', value: timeoutAfter });
  return {
    label: name ?? `steps[${index}]`,
    name,
    kind,
    targets,
    branches,
    paths,
    percents,
    actions: Array.isArray(step.actions) ? step.actions : undefined,
    durations,
    conditions,
    cron: stringAt(step.cron),
    tz: kind === 'timer' ? stringAt(step.tz) : undefined,
  };
}

/** Shape issues on fields the content rules check themselves (durations, conditions, stopAt) are reported once, there. */
function checkedBelow(issue: z.core.$ZodIssue): boolean {
  const last = issue.path[issue.path.length - 1];
  if (issue.path.length === 1 && last === 'stopAt') return true;
  if (issue.path[0] === 'quietHours') return true;
  if (issue.path.length === 2 && issue.path[0] === 'holdout' && last === 'percent' && issue.code !== 'invalid_type') return true;
  if (
    issue.path.length === 2 &&
    (issue.path[0] === 'entry' || issue.path[0] === 'goal' || issue.path[0] === 'exit') &&
    last === 'condition' &&
    issue.code !== 'invalid_type'
  )
    return true;
  if (issue.code === 'invalid_type' || issue.code === 'unrecognized_keys') return false;
  // An experiment's `after` is a date, which only zod checks (a delay's or a timeout's is a duration, checked below).
  if (issue.path[2] === 'experiment') return false;
  return issue.path[0] === 'steps' && (last === 'after' || last === 'ttl' || last === 'condition' || last === 'tz');
}

function shapeProblem(issue: z.core.$ZodIssue, steps: LooseStep[]): WorkflowProblem {
  const [top, index, ...rest] = issue.path;
  if (top === 'steps' && typeof index === 'number') {
    const step = steps[index];
    const field = formatPath(rest);
    return { step: step.label, code: 'invalid_field', message: `Step "${step.label}"${field ? ` ${field}` : ''}: ${issue.message}` };
  }
  // A problem of the whole definition names the save request's field that holds it, so the caller knows where to look.
  const field = formatPath(issue.path);
  return { step: null, code: 'invalid_field', message: `Workflow ${field || 'definition'}: ${issue.message}` };
}

function formatPath(path: PropertyKey[]): string {
  return path.map((key, i) => (typeof key === 'number' ? `[${key}]` : `${i === 0 ? '' : '.'}${String(key)}`)).join('');
}

function duplicateNames(steps: LooseStep[]): WorkflowProblem[] {
  const positions = new Map<string, number[]>();
  steps.forEach((step, i) => step.name !== undefined && positions.set(step.name, [...(positions.get(step.name) ?? []), i + 1]));
  return [...positions]
    .filter(([, at]) => at.length > 1)
    .map(([name, at]) => ({
      step: name,
      code: 'duplicate_step',
      message: `Step name "${name}" is used by ${at.length} steps (positions ${at.join(', ')}); step names must be unique`,
    }));
}

function stepProblems(step: LooseStep, names: Set<string>, saving: boolean): WorkflowProblem[] {
  const problems: WorkflowProblem[] = [];
  const add = (code: ProblemCode, message: string) => problems.push({ step: step.label, code, message: `Step "${step.label}" ${message}` });

  for (const target of step.targets) {
    if (!names.has(target.next)) add('unknown_next', `${target.where} points at "${target.next}", which is not a step of this workflow`);
  }
  // One branch is enough: an event no condition matches leaves the user where they are (no "stay" else needed).
  if (step.kind === 'branch' && step.branches && step.branches.length === 0) {
    add('too_few_branches', 'has no branches; a branch step needs at least 1 (an event no condition matches leaves the user in the step)');
  }
  if (step.kind === 'split' && step.paths) {
    if (step.paths.length < 2) add('too_few_paths', `has ${step.paths.length} path${step.paths.length === 1 ? '' : 's'}; a split step needs at least 2`);
    const known = step.percents.filter((p): p is number => p !== undefined);
    const sum = known.reduce((total, p) => total + p, 0);
    if (step.paths.length > 0 && known.length === step.percents.length && Math.abs(sum - 100) > 1e-9) {
      add('percent_sum', `split percents add up to ${Number(sum.toFixed(6))}; they must add up to 100`);
    }
  }
  if (step.kind === 'parallel' && step.actions && step.actions.length === 0) add('no_actions', 'has no actions; a parallel step emits at least 1 action');
  if (step.kind === 'timer' && step.cron !== undefined) {
    const problem = cronProblem(step.cron, saving ? 'save' : 'stored');
    if (problem) add('bad_cron', `cron ${problem}`);
  }
  if (step.tz !== undefined) {
    const problem = timeZoneProblem(step.tz.trim());
    if (problem) add('bad_time_zone', `tz ${problem}`);
  }
  for (const { field, value } of step.durations) {
    if (!Duration.safeParse(value).success) add('bad_duration', `${field} "${value}" is not a duration; write e.g. 30s, 5m, 2h, 7d or 1h30m`);
    else if (parseDuration(value) <= 0) add('bad_duration', `${field} "${value}" is zero; a duration must be longer than 0`);
    // A save-time rule, like the cron step: a version saved before it keeps loading.
    else if (saving && parseDuration(value) > MAX_DURATION_MS) add('bad_duration', `${field} "${value}" is longer than ${MAX_DURATION}, the longest duration`);
  }
  for (const { field, value } of step.conditions) {
    const problem = conditionProblem(field, value, saving);
    if (problem) add(problem.code, problem.message);
  }
  return problems;
}

function conditionProblem(field: string, value: string, saving: boolean): { code: ProblemCode; message: string } | null {
  const text = ConditionText.safeParse(value);
  if (!text.success) return { code: 'bad_condition', message: `${field}: ${text.error.issues[0].message}` };
  // RE2 patterns and cost are save-time rules: a stored version saved before them is checked for what it needs to run.
  const problem = saving ? celSyntaxProblem(text.data) : celCompileProblem(text.data);
  if (problem) return { code: 'bad_condition', message: `${field} is not a valid condition: ${problem}` };
  const costProblem = saving ? celCostProblem(text.data) : null;
  return costProblem ? { code: 'condition_too_costly', message: `${field} ${costProblem}` } : null;
}

/** The condition of the entry trigger, the goal or the exit criteria (their other fields are shape-checked); step null: the workflow's. */
function workflowConditionProblems(field: 'entry' | 'goal' | 'exit', value: unknown, saving: boolean): WorkflowProblem[] {
  const condition = isRecord(value) ? stringAt(value.condition) : undefined;
  const problem = condition === undefined ? null : conditionProblem(`${field}.condition`, condition, saving);
  return problem ? [{ step: null, code: problem.code, message: `Workflow ${problem.message}` }] : [];
}

/**
 * Cycles of direct/parallel/split steps, and (a save rule: versions saved before branches routed on entry keep
 * loading) branch steps that route on entry: users entering one would be moved around it forever in one transaction.
 * A routing branch moves users on only by its branches, and one back to itself is a stay, not a hop.
 */
function instantCycles(steps: LooseStep[], saving: boolean): WorkflowProblem[] {
  const byName = new Map(steps.flatMap((s) => (s.name === undefined ? [] : [[s.name, s] as const])));
  const routesOnEntry = (s: LooseStep) => saving && s.kind === 'branch' && branchRouting(s.conditions.map((c) => c.value)) === 'entry';
  const instant = (s: LooseStep | undefined) => s !== undefined && s.kind !== undefined && (INSTANT_KINDS.has(s.kind) || routesOnEntry(s));
  const hops = (s: LooseStep) => (s.kind === 'branch' ? s.targets.filter((t) => t.where.startsWith('branches[') && t.next !== s.name) : s.targets);
  const state = new Map<string, 'visiting' | 'done'>();
  const reported = new Set<string>();
  const problems: WorkflowProblem[] = [];
  const visit = (step: LooseStep, trail: string[]) => {
    const name = step.name!;
    state.set(name, 'visiting');
    for (const { next } of hops(step)) {
      const target = byName.get(next);
      if (!instant(target)) continue;
      if (state.get(next) === 'visiting') {
        const cycle = [...trail.slice(trail.indexOf(next)), name];
        const key = [...cycle].sort().join('|');
        if (!reported.has(key)) {
          reported.add(key);
          problems.push({
            step: next,
            code: 'instant_cycle',
            message: `Step "${next}" is on a loop of steps that move users on at once (${[...cycle, next].join(' → ')}); put a timer or delay step, or a branch step that waits for an event, on the loop`,
          });
        }
      } else if (!state.has(next)) visit(target!, [...trail, name]);
    }
    state.set(name, 'done');
  };
  for (const step of steps) if (instant(step) && step.name !== undefined && !state.has(step.name)) visit(step, []);
  return problems;
}

function unreachable(steps: LooseStep[]): WorkflowProblem[] {
  const entry = steps[0];
  if (entry?.name === undefined) return [];
  const byName = new Map<string, LooseStep[]>();
  for (const step of steps) if (step.name !== undefined) byName.set(step.name, [...(byName.get(step.name) ?? []), step]);
  const reached = new Set<LooseStep>([entry]);
  const queue = [entry];
  while (queue.length > 0) {
    for (const { next } of queue.shift()!.targets) {
      for (const target of byName.get(next) ?? []) {
        if (!reached.has(target)) {
          reached.add(target);
          queue.push(target);
        }
      }
    }
  }
  return steps
    .filter((step) => !reached.has(step) && step.name !== undefined)
    .map((step) => ({
      step: step.label,
      code: 'unreachable',
      message: `Step "${step.label}" cannot be reached from the entry step "${entry.label}"; no step moves users to it`,
    }));
}

/** The holdout's share, said in a marketer's words (its other fields are shape-checked). */
function holdoutProblems(holdout: unknown): WorkflowProblem[] {
  if (!isRecord(holdout) || typeof holdout.percent !== 'number') return [];
  const { percent } = holdout;
  const problem = (message: string): WorkflowProblem[] => [{ step: null, code: 'bad_holdout', message }];
  if (!Number.isFinite(percent) || percent < 0)
    return problem(`Workflow holdout.percent ${percent} is below 0: hold out 0 to ${MAX_HOLDOUT_PERCENT}% of entering users`);
  if (percent > MAX_HOLDOUT_PERCENT) {
    return problem(`Workflow holdout.percent ${percent} is over ${MAX_HOLDOUT_PERCENT}: hold out at most half of the entering users, e.g. 10`);
  }
  return [];
}

/** A journey's quiet hours: absent (the tenant's), false (none) or a rule, each wrong field named once. */
function journeyQuietHoursProblems(quietHours: unknown): WorkflowProblem[] {
  if (quietHours === undefined || quietHours === false) return [];
  const problem = (message: string): WorkflowProblem => ({ step: null, code: 'bad_quiet_hours', message: `Workflow quietHours${message}` });
  if (!isRecord(quietHours))
    return [problem(` is ${JSON.stringify(quietHours)?.slice(0, 40)}: write false (none for this journey) or a rule, e.g. {"start": "21:00", "end": "08:00"}`)];
  const shape = QuietHoursRule.safeParse(quietHours);
  const problems = shape.success
    ? []
    : shape.error.issues.map((issue) => problem(`${issue.path.length ? '.' : ''}${formatPath(issue.path)}: ${issue.message}`));
  return [...problems, ...quietHoursProblems(quietHours).map(({ field, message }) => problem(`.${field}: ${message}`))];
}

function stopAtProblems(stopAt: unknown, options: ValidateOptions): WorkflowProblem[] {
  if (stopAt === undefined) return [];
  const problem = (message: string): WorkflowProblem[] => [{ step: null, code: 'bad_stop_at', message }];
  if (typeof stopAt !== 'string' || !WorkflowDefinition.shape.stopAt.safeParse(stopAt).success) {
    return problem(`Workflow stopAt ${JSON.stringify(stopAt)} is not an ISO 8601 time with a zone, e.g. 2026-12-31T23:00:00Z`);
  }
  if (options.now !== undefined && Date.parse(stopAt) <= options.now) {
    return problem(`Workflow stopAt ${stopAt} is in the past; an instance would stop as soon as it starts`);
  }
  return [];
}
