// Audience estimates: how many users a condition matches right now, computed as a bitmap plan over the tenant's
// crowds, user ID ranges and profile index, or per user when it has no plan: over the users its planned conjuncts
// leave, all of them or a uniform random sample with an interval (estimate.ts), within the query deadline
// (server/conditions/deadline.ts). Explanations are in explain.ts; the tenant's indexed fields here too.
import { z } from 'zod';
import { systemClock } from '../clock';
import { compileCondition, requireCondition, type CompiledCondition } from '../conditions/compile';
import { QueryDeadline, usersPerCheckpoint, type DeadlineOptions } from '../conditions/deadline';
import { MAX_CONDITION_LENGTH } from '../../core/conditions/gate';
import { indexedPlanSteps, planResolver, type ProfileIndex } from './index-plan';
import { runBetween } from '../conditions/plan-eval';
import { profileKeysRead } from '../conditions/profile-predicate';
import { loadCrowd, RoaringBitmap32 } from '../crowd';
import { CrowdName } from '../crowd/store';
import { notFound } from '../errors';
import { countInterval, exactCount, sampleRanks, UsersByRank, type CountInterval } from './estimate';
import { profileIndex } from './index-store';
import type { Database } from '../storage/database';

export type { StepConditionExplanation } from './explain';

/** Users evaluated one by one when a condition has no plan; past it they are a random sample (estimate.ts). */
export const MAX_PER_USER_AUDIENCE = 100_000;

export const AudienceBody = z.strictObject({
  // Not bounded here: the gate answers a condition too long with invalid_condition, as every route does.
  condition: z
    .string()
    .describe(
      `A CEL condition of at most ${MAX_CONDITION_LENGTH.toLocaleString('en-US')} characters, checked as a workflow save checks it: ` +
        '400 `invalid_condition` or `condition_too_costly` naming the problem',
    ),
  crowd: CrowdName.optional(),
  sample: z.number().int().min(0).max(1_000).default(20),
});

export type AudienceResult = {
  /** Users matching: exact when `exact`, otherwise estimated from `evaluated` users drawn at random. */
  count: number;
  /** The true count lies in [low, high] with probability `confidence` (low = high = count when exact). */
  low: number;
  high: number;
  confidence: number;
  /** The first matching user IDs among those evaluated, ascending. */
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

/** Users whose profiles are read back from the index at a time in the per-user path. */
const PROFILE_SLICE = 4_096;

export type AudienceOptions = Partial<DeadlineOptions> & {
  now?: number;
  /** Where the sample's randomness comes from (tests pass a seeded one); Math.random otherwise. */
  random?: () => number;
  /** MAX_PER_USER_AUDIENCE unless a test says otherwise. */
  maxPerUser?: number;
};

export async function estimateAudience(
  database: Database,
  tenantId: string,
  body: z.infer<typeof AudienceBody>,
  options: AudienceOptions = {},
): Promise<AudienceResult> {
  const started = performance.now();
  const checked = requireCondition(body.condition);
  const condition = compileCondition(checked);
  const clock = options.clock ?? systemClock;
  const now = options.now ?? clock.now();
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
  // Taken now: the per-user path yields the thread, and profile writes may change the index's bitmap meanwhile.
  const universeSize = universe.size;
  const resolver = planResolver((name) => crowds.get(name), index);
  const finish = (matched: RoaringBitmap32, interval: CountInterval, mode: AudienceResult['mode'], evaluated: number): AudienceResult => ({
    ...interval,
    sample: [...firstUsers(matched, body.sample)],
    universe: universeSize,
    mode,
    exact: interval.confidence === 1,
    evaluated,
    ms: Math.round((performance.now() - started) * 100) / 100,
  });
  // The deadline covers the evaluation, not loading the index and crowds (a first call after a restart reads them). A
  // plan is metered leaf by leaf: a few hundred profile comparisons over millions of profiles are seconds of work.
  const deadline = new QueryDeadline('The audience estimate', { ...options, clock });
  const planned = (plan: NonNullable<CompiledCondition['plan']>) =>
    runBetween(indexedPlanSteps(plan, resolver, universe), () => deadline.checkpoint(() => 'its bitmap plan partly evaluated'));
  if (condition.plan) {
    const matched = await planned(condition.plan);
    const result = finish(matched, exactCount(matched.size), 'plan', universeSize);
    matched.dispose(); // 1.25 MB at 10M users: see evaluatePlan on why it is not left to the collector
    return result;
  }
  // Only the users the planned conjuncts leave can match: the rest need no per-user look.
  // A copy either way: the sample reads users by rank while profile writes may change the index's own bitmap.
  const candidates = condition.narrowing ? await planned(condition.narrowing) : universe.clone();
  try {
    const { matched, evaluated } = await evaluatePerUser(condition, checked.cost, candidates, crowds, index, deadline, { ...options, now });
    return finish(RoaringBitmap32.from(matched), countInterval(matched.length, evaluated, candidates.size), 'per-user', evaluated);
  } finally {
    candidates.dispose();
  }
}

/**
 * The condition evaluated per user over `candidates`: all of them, or a uniform random sample of maxPerUser of
 * them, read a slice at a time (UsersByRank) so that the deadline meters the sampling too.
 */
async function evaluatePerUser(
  condition: CompiledCondition,
  costPerUser: number,
  candidates: RoaringBitmap32,
  crowds: Map<string, RoaringBitmap32 | undefined>,
  index: ProfileIndex,
  deadline: QueryDeadline,
  options: AudienceOptions & { now: number },
): Promise<{ matched: number[]; evaluated: number }> {
  const population = candidates.size;
  const limit = options.maxPerUser ?? MAX_PER_USER_AUDIENCE;
  const ranks = population > limit ? sampleRanks(population, limit, options.random ?? Math.random) : null;
  const total = ranks ? ranks.length : population;
  const keys = profileKeysRead(condition.text) ?? undefined;
  const membership = { has: (name: string, user: number) => crowds.get(name)?.has(user) ?? false };
  const step = usersPerCheckpoint(costPerUser);
  const everyone = ranks ? null : firstUsers(candidates, population);
  const byRank = ranks ? new UsersByRank(candidates) : null;
  const matched: number[] = [];
  try {
    for (let from = 0; from < total; from += PROFILE_SLICE) {
      const slice = everyone ? everyone.subarray(from, from + PROFILE_SLICE) : ranks!.subarray(from, from + PROFILE_SLICE).map((rank) => byRank!.at(rank));
      const profiles = condition.usesProfile ? index.materialize(RoaringBitmap32.from(slice), keys) : null;
      for (let i = 0; i < slice.length; i++) {
        if (i % step === 0) await deadline.checkpoint(() => `${(from + i).toLocaleString('en-US')} of ${total.toLocaleString('en-US')} users evaluated`);
        const user = slice[i];
        if (condition.predicate({ user, now: options.now, profile: profiles?.get(user) }, membership)) matched.push(user);
      }
    }
  } finally {
    byRank?.dispose();
  }
  return { matched, evaluated: total };
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
