import type { ReadonlyRoaringBitmap32, RoaringBitmap32 } from 'roaring';
import { AppError } from '../errors';

export type ConditionEvent = { type: string; data: Record<string, unknown>; time: number /* epoch ms */ };
export type ConditionInput = { user: number; now: number; event?: ConditionEvent; profile?: Record<string, unknown> };

/** The predicate side of `inCrowd("name")`. */
export interface CrowdMembership {
  has(crowdName: string, user: number): boolean;
}

export type PlanScalar = string | number | boolean;

/** Bitmap algebra for conditions that only use inCrowd, profile ==/in, &&, ||, ! and true/false. */
export type BitmapPlan =
  | { op: 'all' }
  | { op: 'none' }
  | { op: 'crowd'; name: string }
  | { op: 'profileEq'; field: string; value: PlanScalar }
  | { op: 'profileIn'; field: string; values: PlanScalar[] }
  | { op: 'and' | 'or'; args: BitmapPlan[] }
  | { op: 'not'; arg: BitmapPlan };

export interface CompiledCondition {
  text: string;
  /** Missing values (no event, no profile, missing field, type mismatch) make a comparison false; never throws. */
  predicate(input: ConditionInput, crowds: CrowdMembership): boolean;
  /** Non-null only when the condition uses nothing but inCrowd, profile ==/in, &&, ||, !, true/false. */
  plan: BitmapPlan | null;
  usesEvent: boolean;
  usesProfile: boolean;
  usesNow: boolean;
  crowds: string[];
  profileFields: string[];
}

/** Compiles CEL once (cached by text). Throws AppError('invalid_workflow') naming the problem on bad CEL. */
export function compileCondition(text: string): CompiledCondition {
  throw new AppError('invalid_workflow', `conditions are not implemented yet: ${text}`);
}

/** Where a plan's leaves come from: crowd bitmaps and the tenant's profile index. Returned bitmaps are never mutated. */
export interface PlanResolver {
  crowd(name: string): ReadonlyRoaringBitmap32;
  profileEquals(field: string, value: PlanScalar): ReadonlyRoaringBitmap32;
}

/** The users of `universe` that satisfy `plan`, by bitmap AND / OR / ANDNOT only (never a per-user loop). */
export function evaluatePlan(plan: BitmapPlan, resolver: PlanResolver, universe: ReadonlyRoaringBitmap32): RoaringBitmap32 {
  throw new Error(`evaluatePlan is not implemented yet (${plan.op}, ${typeof resolver}, ${universe.size})`);
}
