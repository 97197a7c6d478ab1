// Explanations: per condition of a workflow, whether bulk evaluation (timers, ttl, audience estimates) runs it as a
// bitmap plan or per user, and why. A draft's conditions pass the gate on the request thread first (draftConditions).
import { systemClock } from '../clock';
import { compileCondition, requireCondition, type BitmapPlan, type CompiledCondition } from '../conditions/compile';
import { QueryDeadline, type DeadlineOptions } from '../conditions/deadline';
import { checkCondition } from '../../core/conditions/gate';
import { profileIndex } from './index-store';
import type { ProfileIndex } from './index-tenant';
import { z } from 'zod';
import { WorkflowDefinition } from '../../core/model/workflow';
import type { Database } from '../storage/database';

/** How one profile leaf of a plan is answered by the index. */
function leafNote(index: ProfileIndex, plan: Extract<BitmapPlan, { field: string }>): string {
  const path = plan.field.split('\u001f').join('.');
  const field = index.path(plan.field);
  if (!field) return `profile.${path}: no user has it yet (matches nobody)`;
  switch (plan.op) {
    case 'profileHas':
      return `has(profile.${path}): presence bitmap (${field.presence.size} users)`;
    case 'profileCmp':
      return (
        `profile.${path} ${plan.cmp} ${plan.value}: range over the bit-sliced index (${field.numbers.depth} bit slices, scale ${field.scale})` +
        (field.others.size ? ` plus a scan of ${field.others.size} values fixed point cannot hold` : '')
      );
    case 'profileTime':
      return `timestamp(profile.${path}) ${plan.cmp} ${new Date(plan.at).toISOString()}: range over the timestamp bit slices (${field.times.depth})`;
    default: {
      const values = plan.op === 'profileIn' ? plan.values : [plan.value];
      const strings = values.filter((v) => typeof v === 'string').length;
      if (strings > 0 && field.highCardinality) {
        return (
          `profile.${path} ${plan.op === 'profileIn' ? 'in' : '=='} …: per-user scan of ${field.highCardinality.size} values (more than ` +
          `${index.indexedValueLimit} distinct strings, the limit maxIndexedValuesPerAttribute, so no equality bitmaps)`
        );
      }
      return `profile.${path} ${plan.op === 'profileIn' ? `in ${JSON.stringify(values)}` : `== ${JSON.stringify(plan.value)}`}: equality bitmap${values.length > 1 ? 's' : ''}`;
    }
  }
}

type UserRange = Extract<BitmapPlan, { op: 'userRange' }>;

function userRangeNote({ from, to }: UserRange): string {
  return from === to ? `user == ${from}: one user ID` : `user ${from}–${to}: a range of user IDs (one AND with the range, no per-user loop)`;
}

function planLeaves(plan: BitmapPlan, out: Array<Extract<BitmapPlan, { field: string }> | UserRange> = []) {
  if (plan.op === 'and' || plan.op === 'or') for (const arg of plan.args) planLeaves(arg, out);
  else if (plan.op === 'not') planLeaves(plan.arg, out);
  else if ('field' in plan || plan.op === 'userRange') out.push(plan);
  return out;
}

export type ConditionExplanation = { mode: 'plan' | 'per-user'; reason: string; leaves: string[] };

/** Whether a condition runs as a bitmap plan over the tenant's index, or per user, and why. */
export function explainCondition(condition: CompiledCondition, index: ProfileIndex): ConditionExplanation {
  if (condition.plan) {
    const leaves = planLeaves(condition.plan).map((leaf) => (leaf.op === 'userRange' ? userRangeNote(leaf) : leafNote(index, leaf)));
    const scans = leaves.filter((note) => note.includes('scan of'));
    return {
      mode: 'plan',
      reason:
        scans.length > 0
          ? `bitmap plan; ${scans.length} leaf needs a per-user scan of values the index keeps per user`
          : 'bitmap plan: AND / OR / ANDNOT over crowd and profile-index bitmaps, no per-user loop',
      leaves,
    };
  }
  const reasons: string[] = [];
  if (condition.usesEvent) reasons.push('it reads event.* (known only when an event arrives; timers and ttl see no event)');
  if (condition.usesNow) reasons.push('it reads now outside a timestamp(profile.x) comparison with a literal');
  if (reasons.length === 0)
    reasons.push(
      'a part of it has no bitmap form (plans cover inCrowd, profile ==, !=, in, <, <=, >, >=, has(), timestamp(profile.x) compared with timestamp("…"), ' +
        'user compared with int literals, &&, ||, !)',
    );
  return { mode: 'per-user', reason: `per user, profiles read from the in-memory index: ${reasons.join('; ')}`, leaves: [] };
}

export type StepConditionExplanation = ConditionExplanation & {
  step: string;
  kind: 'branch' | 'timer';
  branch: number | null;
  condition: string;
  perEvent: string | null;
};

/**
 * Every condition of `definition` explained; one a stored version holds that the gate refuses says why instead.
 * Bounded by the query deadline (a definition may hold thousands of conditions).
 */
export async function explainWorkflow(
  database: Database,
  tenantId: string,
  definition: WorkflowDefinition,
  options: Partial<DeadlineOptions> = {},
): Promise<StepConditionExplanation[]> {
  const index = await profileIndex(database, tenantId);
  const deadline = new QueryDeadline('The explanation', { ...options, clock: options.clock ?? systemClock });
  const out: StepConditionExplanation[] = [];
  const explain = async (step: string, kind: 'branch' | 'timer', branch: number | null, condition: string) => {
    await deadline.checkpoint(() => `${out.length} conditions explained`);
    const check = checkCondition(condition, 'stored');
    const explained: ConditionExplanation = check.ok
      ? explainCondition(compileCondition(check.condition), index)
      : { mode: 'per-user', reason: `invalid condition: ${check.problem}`, leaves: [] };
    // Branch conditions also run per event, for the event's user: profiles are then read from the index in memory.
    const perEvent =
      kind === 'branch' ? "per event: evaluated for the event's user, profile attributes read back from the in-memory index (no database query)" : null;
    out.push({ step, kind, branch, condition, perEvent, ...explained });
  };
  for (const step of definition.steps) {
    if (step.kind === 'branch') for (const [i, b] of step.branches.entries()) await explain(step.name, 'branch', i, b.condition);
    if (step.kind === 'timer' && step.condition) await explain(step.name, 'timer', null, step.condition);
  }
  return out;
}

/** What POST …/explain takes: an unsaved definition (the editor's draft). */
export const ExplainBody = z.strictObject({ definition: WorkflowDefinition });

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Every condition of a draft definition through the gate, before its shape is checked (so a condition too long is
 * `invalid_condition` here as in every route, not a schema error): throws the first refusal, naming the step.
 */
export function requireDraftConditions(definition: unknown): void {
  if (!isRecord(definition)) return;
  for (const field of ['entry', 'goal', 'exit'] as const) {
    const holder = definition[field];
    if (isRecord(holder) && typeof holder.condition === 'string')
      requireCondition(holder.condition, 'new', `definition.${field}.condition`, `Workflow ${field}.condition`);
  }
  const steps = Array.isArray(definition.steps) ? definition.steps : [];
  for (const [s, step] of steps.entries()) {
    if (!isRecord(step)) continue;
    const label = typeof step.name === 'string' ? `Step ${JSON.stringify(step.name)} ` : `steps[${s}].`;
    const branches = Array.isArray(step.branches) ? step.branches : [];
    for (const [b, branch] of branches.entries()) {
      if (isRecord(branch) && typeof branch.condition === 'string')
        requireCondition(branch.condition, 'new', `definition.steps[${s}].branches[${b}].condition`, `${label}branches[${b}].condition`);
    }
    if (typeof step.condition === 'string') requireCondition(step.condition, 'new', `definition.steps[${s}].condition`, `${label}condition`);
  }
}
