import roaring, { type ReadonlyRoaringBitmap32, type RoaringBitmap32 } from 'roaring';
import { ProfileIndex } from './index-tenant';
import type { BitmapPlan, ProfileLeaf } from '../../core/conditions/plan';
import { planSteps, runToEnd, unionDisposing, type PlanResolver, type Steps } from '../conditions/plan-eval';

// roaring is CommonJS: under ESM its classes are only reachable through the default import.
const { RoaringBitmap32: Bitmap } = roaring;

export { ProfileIndex };

const EMPTY: ReadonlyRoaringBitmap32 = new Bitmap().freeze();

/** The users of `within` that satisfy one profile leaf of a plan, answered by the tenant's index. */
export function profileLeaf(profiles: ProfileIndex, leaf: ProfileLeaf, within: ReadonlyRoaringBitmap32) {
  switch (leaf.op) {
    case 'profileEq':
      return profiles.equals(leaf.field, leaf.value, within);
    case 'profileIn':
      return unionDisposing(leaf.values.map((value) => profiles.equals(leaf.field, value, within)));
    case 'profileHas':
      return profiles.has(leaf.field, within);
    case 'profileCmp':
      return profiles.compare(leaf.field, leaf.cmp, leaf.value, within);
    case 'profileTime':
      return profiles.compareTime(leaf.field, leaf.cmp, leaf.at, within);
  }
}

/** A resolver over one tenant's profile index (and its crowds), which plans can cache their results on. */
export type IndexPlanResolver = PlanResolver & { readonly profiles: ProfileIndex };

/** A PlanResolver over crowd bitmaps (looked up by name; an unknown crowd is empty) and a tenant's ProfileIndex. */
export function planResolver(crowd: (name: string) => ReadonlyRoaringBitmap32 | undefined, profiles: ProfileIndex): IndexPlanResolver {
  return {
    profiles,
    crowd: (name) => crowd(name) ?? EMPTY,
    profile: (leaf, within) => profileLeaf(profiles, leaf, within),
  };
}

/** Plan results kept per index; the least recently used goes first. */
const MAX_CACHED_RESULTS = 32;

/** The crowds a plan reads, and whether it reads the profile index at all. */
function leavesOf(plan: BitmapPlan, out = { crowds: [] as string[], profile: false }) {
  if (plan.op === 'crowd') out.crowds.push(plan.name);
  else if (plan.op === 'and' || plan.op === 'or') for (const arg of plan.args) leavesOf(arg, out);
  else if (plan.op === 'not') leavesOf(plan.arg, out);
  else if ('field' in plan) out.profile = true;
  return out;
}

/**
 * The users of `users` satisfying `plan`, like evaluatePlan, but through the plan's result over every user of the
 * index, kept while the index has had no write (its version) and the crowds it read are the same bitmaps.
 *
 * A timer over 10M users runs its condition once per partition, each over an eighth of the users spread across the
 * whole id range: eight plans over every roaring container, where one plan and eight ANDs do. Firings, ttl checks
 * and audience estimates of the same condition between two profile writes reuse the result outright. Plans decide
 * each user on its own, so plan(index users) ∩ users = plan(users ∩ index users); users without a profile are
 * evaluated apart (usually there are none).
 */
export function evaluateIndexedPlan(plan: BitmapPlan, resolver: IndexPlanResolver, users: ReadonlyRoaringBitmap32): RoaringBitmap32 {
  return runToEnd(indexedPlanSteps(plan, resolver, users));
}

/**
 * evaluateIndexedPlan's work, pausing after each leaf (server/conditions/plan-eval.ts runBetween). A write to the
 * index between two leaves changes its version, so a result computed across one is never reused.
 */
export function* indexedPlanSteps(plan: BitmapPlan, resolver: IndexPlanResolver, users: ReadonlyRoaringBitmap32): Steps<RoaringBitmap32> {
  const index = resolver.profiles;
  const leaves = leavesOf(plan);
  // Crowd-only plans are a few ANDs of the users themselves: nothing to reuse.
  if (!leaves.profile || index.size === 0) return yield* planSteps(plan, resolver, users);
  const crowds = leaves.crowds.map((name) => resolver.crowd(name));
  const results = index.planResults;
  let cached = results.get(plan);
  const fresh = cached && cached.version === index.version && cached.crowds.length === crowds.length && cached.crowds.every((c, i) => c === crowds[i]);
  if (!fresh) {
    // A small set is cheaper evaluated by itself than the whole index.
    if (users.size * 16 < index.size) return yield* planSteps(plan, resolver, users);
    // Results never leave this cache (callers get ANDs of them, in one synchronous run after the lookup), so a stale
    // or evicted one is freed at once; a stale one leaves the cache before the pauses below, where another caller of
    // the same plan could otherwise find it freed.
    if (cached) {
      results.delete(plan);
      cached.matched.dispose();
    }
    const version = index.version;
    cached = { version, crowds, matched: yield* planSteps(plan, resolver, index.users) };
    // Another caller may have cached the same plan during the pauses: the newer result replaces it.
    const meanwhile = results.get(plan);
    if (meanwhile) {
      results.delete(plan);
      meanwhile.matched.dispose();
    }
    if (results.size >= MAX_CACHED_RESULTS) {
      const [oldest, evicted] = results.entries().next().value!;
      evicted.matched.dispose();
      results.delete(oldest);
    }
  }
  results.delete(plan);
  results.set(plan, cached!);
  const matched = Bitmap.and(users, cached!.matched);
  const withoutProfile = Bitmap.andNot(users, index.users);
  if (!withoutProfile.isEmpty) {
    const matchedWithout = yield* planSteps(plan, resolver, withoutProfile);
    matched.orInPlace(matchedWithout);
    matchedWithout.dispose();
  }
  withoutProfile.dispose();
  return matched;
}
