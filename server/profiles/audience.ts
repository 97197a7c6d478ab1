// Audience estimates and condition explanations: how many users a condition matches right now, computed as a bitmap
// plan over the tenant's crowds and profile index, or per user on a bounded sample when it has no plan; and, per
// condition of a workflow, whether bulk evaluation runs as a plan or per user, and why.
import { z } from 'zod';
import { compileCondition, type BitmapPlan } from '../conditions/compile';
import { evaluateIndexedPlan, planResolver } from '../conditions/profile-index';
import { profileKeysRead } from '../conditions/profile-predicate';
import { loadCrowd, RoaringBitmap32 } from '../crowd';
import { CrowdName } from '../crowd/store';
import { notFound } from '../errors';
import { profileIndex } from './index-store';
import { MAX_DISTINCT_STRINGS } from './index-field';
import type { ProfileIndex } from './index-tenant';
import type { WorkflowDefinition } from '../model/workflow';
import type { Database } from '../storage/database';

/** Users evaluated one by one when a condition has no plan; past it the count is scaled up from this sample. */
export const MAX_PER_USER_AUDIENCE = 100_000;

export const AudienceBody = z.strictObject({
  condition: z.string().min(1).max(10_000),
  crowd: CrowdName.optional(),
  sample: z.number().int().min(0).max(1_000).default(20),
});

export type AudienceResult = {
  /** Users matching (exact with a plan; an estimate scaled from `evaluated` users otherwise). */
  count: number;
  /** The first matching user IDs, ascending. */
  sample: number[];
  /** The users the condition was evaluated over: the crowd, or the users with a profile plus the crowds the condition names. */
  universe: number;
  mode: 'plan' | 'per-user';
  exact: boolean;
  evaluated: number;
  ms: number;
};

/** The `n` smallest users of `bitmap`. */
function firstUsers(bitmap: RoaringBitmap32, n: number): Uint32Array {
  const count = Math.min(n, bitmap.size);
  return count === 0 ? new Uint32Array(0) : bitmap.rangeUint32Array(new Uint32Array(count), 0, count);
}

/** Crowds by name for one request (an unknown crowd is empty, as inCrowd treats it). */
async function crowdsOf(database: Database, tenantId: string, names: string[]): Promise<Map<string, RoaringBitmap32 | undefined>> {
  const crowds = new Map<string, RoaringBitmap32 | undefined>();
  for (const name of names) crowds.set(name, (await loadCrowd(database, tenantId, name))?.bitmap);
  return crowds;
}

export async function estimateAudience(database: Database, tenantId: string, body: z.infer<typeof AudienceBody>, now = Date.now()): Promise<AudienceResult> {
  const started = performance.now();
  const condition = compileCondition(body.condition);
  const index = await profileIndex(database, tenantId);
  const crowds = await crowdsOf(database, tenantId, condition.crowds);
  let universe: RoaringBitmap32;
  if (body.crowd) {
    const crowd = await loadCrowd(database, tenantId, body.crowd);
    if (!crowd) throw notFound(`Crowd "${body.crowd}"`);
    universe = crowd.bitmap;
  } else {
    const named = [...crowds.values()].filter((c): c is RoaringBitmap32 => c !== undefined);
    // Read only (plans never change their universe), so the index's own bitmap serves when no crowd adds to it.
    universe = named.length === 0 ? index.users : RoaringBitmap32.orMany([index.users, ...named]);
  }
  const finish = (matched: RoaringBitmap32, count: number, mode: AudienceResult['mode'], evaluated: number): AudienceResult => ({
    count,
    sample: [...firstUsers(matched, body.sample)],
    universe: universe.size,
    mode,
    exact: evaluated === universe.size,
    evaluated,
    ms: Math.round((performance.now() - started) * 100) / 100,
  });
  if (condition.plan) {
    const matched = evaluateIndexedPlan(
      condition.plan,
      planResolver((name) => crowds.get(name), index),
      universe,
    );
    const result = finish(matched, matched.size, 'plan', universe.size);
    matched.dispose(); // 1.25 MB at 10M users: see evaluatePlan on why it is not left to the collector
    return result;
  }
  const users = firstUsers(universe, MAX_PER_USER_AUDIENCE);
  const profiles = condition.usesProfile ? index.materialize(RoaringBitmap32.from(users), profileKeysRead(condition.text) ?? undefined) : null;
  const membership = { has: (name: string, user: number) => crowds.get(name)?.has(user) ?? false };
  const matched: number[] = [];
  for (const user of users) if (condition.predicate({ user, now, profile: profiles?.get(user) }, membership)) matched.push(user);
  const count = users.length === universe.size ? matched.length : Math.round((matched.length * universe.size) / Math.max(1, users.length));
  return finish(RoaringBitmap32.from(matched), count, 'per-user', users.length);
}

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
          `${MAX_DISTINCT_STRINGS} distinct strings, so no equality bitmaps)`
        );
      }
      return `profile.${path} ${plan.op === 'profileIn' ? `in ${JSON.stringify(values)}` : `== ${JSON.stringify(plan.value)}`}: equality bitmap${values.length > 1 ? 's' : ''}`;
    }
  }
}

function planLeaves(plan: BitmapPlan, out: Array<Extract<BitmapPlan, { field: string }>> = []) {
  if (plan.op === 'and' || plan.op === 'or') for (const arg of plan.args) planLeaves(arg, out);
  else if (plan.op === 'not') planLeaves(plan.arg, out);
  else if ('field' in plan) out.push(plan);
  return out;
}

export type ConditionExplanation = { mode: 'plan' | 'per-user'; reason: string; leaves: string[] };

/** Whether `text` runs as a bitmap plan over the tenant's index, or per user, and why. */
export function explainCondition(text: string, index: ProfileIndex): ConditionExplanation {
  const condition = compileCondition(text);
  if (condition.plan) {
    const leaves = planLeaves(condition.plan).map((leaf) => leafNote(index, leaf));
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
      'a part of it has no bitmap form (plans cover inCrowd, profile ==, !=, in, <, <=, >, >=, has(), timestamp(profile.x) compared with timestamp("…"), &&, ||, !)',
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

/** Every condition of `definition` explained; invalid ones say what is wrong instead. */
export async function explainWorkflow(database: Database, tenantId: string, definition: WorkflowDefinition): Promise<StepConditionExplanation[]> {
  const index = await profileIndex(database, tenantId);
  const out: StepConditionExplanation[] = [];
  const explain = (step: string, kind: 'branch' | 'timer', branch: number | null, condition: string) => {
    let explained: ConditionExplanation;
    try {
      explained = explainCondition(condition, index);
    } catch (error) {
      explained = { mode: 'per-user', reason: `invalid condition: ${(error as Error).message}`, leaves: [] };
    }
    // Branch conditions also run per event, for the event's user: profiles are then read from the index in memory.
    const perEvent =
      kind === 'branch' ? "per event: evaluated for the event's user, profile attributes read back from the in-memory index (no database query)" : null;
    out.push({ step, kind, branch, condition, perEvent, ...explained });
  };
  for (const step of definition.steps) {
    if (step.kind === 'branch') step.branches.forEach((b, i) => explain(step.name, 'branch', i, b.condition));
    if (step.kind === 'timer' && step.condition) explain(step.name, 'timer', null, step.condition);
  }
  return out;
}

export type FieldSummary = {
  path: string;
  /** The type most of its users have ("timestamp": strings that read as timestamps). */
  type: 'string' | 'number' | 'boolean' | 'object' | 'other' | 'timestamp';
  users: number;
  types: { string: number; number: number; boolean: number; object: number; other: number; timestamp: number };
  topValues: Array<{ value: string | boolean; users: number }>;
  distinctStrings: number | null;
  highCardinality: boolean;
  numbers: { scale: number; bitSlices: number } | null;
};

/** The tenant's indexed attribute paths with their user counts, types and most common values (for the studio). */
export async function profileFields(
  database: Database,
  tenantId: string,
  top = 10,
): Promise<{ profiles: number; bitmapBytes: number; fields: FieldSummary[] }> {
  const index = await profileIndex(database, tenantId);
  const fields = index.paths().map(({ segments, field }): FieldSummary => {
    const strings = field.highCardinality ? field.highCardinality.size : [...field.strings.values()].reduce((sum, users) => sum + users.size, 0);
    const otherNumbers = [...field.others.values()].filter((value) => typeof value === 'number').length;
    const values: Array<{ value: string | boolean; users: number }> = [...field.strings].map(([value, users]) => ({ value, users: users.size }));
    if (field.trues.size) values.push({ value: true, users: field.trues.size });
    if (field.falses.size) values.push({ value: false, users: field.falses.size });
    const types = {
      string: strings,
      number: field.numbers.exists.size + otherNumbers,
      boolean: field.trues.size + field.falses.size,
      object: field.objects.size,
      other: field.others.size - otherNumbers,
      timestamp: field.times.exists.size,
    };
    const [mostUsed] = (Object.keys(types) as Array<keyof typeof types>).filter((t) => t !== 'timestamp').sort((a, b) => types[b] - types[a]);
    return {
      path: segments.join('.'),
      type: mostUsed === 'string' && types.timestamp === types.string ? 'timestamp' : mostUsed,
      users: field.presence.size,
      types,
      topValues: values.sort((a, b) => b.users - a.users).slice(0, top),
      distinctStrings: field.highCardinality ? null : field.strings.size,
      highCardinality: field.highCardinality !== null,
      numbers: field.numbers.exists.size > 0 ? { scale: field.scale, bitSlices: field.numbers.depth } : null,
    };
  });
  fields.sort((a, b) => b.users - a.users || a.path.localeCompare(b.path));
  return { profiles: index.size, bitmapBytes: index.bitmapBytes(), fields };
}
