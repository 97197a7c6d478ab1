import roaring, { type ReadonlyRoaringBitmap32, type RoaringBitmap32 } from 'roaring';
import type { BitmapPlan, ProfileLeaf } from './plan';

// roaring is CommonJS: under ESM its classes are only reachable through the default import.
const { RoaringBitmap32: Bitmap } = roaring;

/** Where a plan's leaves come from: crowd bitmaps and the tenant's profile index. Returned bitmaps are never mutated. */
export interface PlanResolver {
  crowd(name: string): ReadonlyRoaringBitmap32;
  /** The users of `within` whose profile satisfies the leaf. */
  profile(leaf: ProfileLeaf, within: ReadonlyRoaringBitmap32): RoaringBitmap32;
}

/** The users of `universe` that satisfy `plan`, by bitmap AND / OR / ANDNOT only (never a per-user loop). */
export function evaluatePlan(plan: BitmapPlan, resolver: PlanResolver, universe: ReadonlyRoaringBitmap32): RoaringBitmap32 {
  switch (plan.op) {
    case 'all':
      return universe.clone();
    case 'none':
      return new Bitmap();
    case 'crowd':
      return Bitmap.and(universe, resolver.crowd(plan.name));
    case 'profileIn':
      if (plan.values.length === 0) return new Bitmap();
      return Bitmap.orMany(plan.values.map((value) => resolver.profile({ op: 'profileEq', field: plan.field, value }, universe)));
    case 'profileEq':
    case 'profileHas':
    case 'profileCmp':
    case 'profileTime':
      return resolver.profile(plan, universe);
    case 'or':
      return Bitmap.orMany(plan.args.map((arg) => evaluatePlan(arg, resolver, universe)));
    case 'and': {
      // Each further operand only needs evaluating inside what is left, so negations run last as ANDNOTs of a
      // shrinking universe instead of complements of the whole one.
      if (plan.args.length === 0) return universe.clone();
      const ordered = [...plan.args.filter((arg) => arg.op !== 'not'), ...plan.args.filter((arg) => arg.op === 'not')];
      let remaining = evaluatePlan(ordered[0], resolver, universe);
      for (const arg of ordered.slice(1)) {
        if (remaining.isEmpty) break;
        remaining = evaluatePlan(arg, resolver, remaining);
      }
      return remaining;
    }
    case 'not':
      return Bitmap.andNot(universe, evaluatePlan(plan.arg, resolver, universe));
  }
}
