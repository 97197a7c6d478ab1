// Holdout groups (issue 37 §4): a journey may hold out a share of its entering users as a control group. Who is held
// out is a pure function of the user id built on the split steps' hash (./user-hash.ts), salted with the workflow id
// (or the holdout's seed), so the engine (which counts the group at entry) and the webhook cut (which withholds its
// deliveries) agree without sharing any state, and a user re-entering is held out again. Pure: the canvas imports it.
//
// The function has two levels so that a whole crowd can be split by bitmap operations instead of a hash per user
// (server/engine/holdout-bitmap.ts): the user's upper 16 bits pick one of HOLDOUT_MASKS salts, and the lower 16
// bits hashed with that salt decide. So the held-out users of one 65,536-id block are that block ANDed with one of
// 16 fixed masks.
import { fnv1a, mix } from './user-hash';

/** The holdout as a workflow definition states it (see `Holdout` in ./workflow.ts). */
export type HoldoutSpec = { percent: number; seed?: string };

/** How many masks the blocks of 65,536 ids choose from. */
export const HOLDOUT_MASKS = 16;

/** A holdout ready to apply: `seed` picks each block's mask, `maskSeeds[j]` salts mask j; held when the hash < bound. */
export type HoldoutPlan = { seed: number; maskSeeds: number[]; bound: number };

/** The most of the entering users a journey may hold out: a control group larger than the treated one measures little more. */
export const MAX_HOLDOUT_PERCENT = 50;

/** The plan of a workflow's holdout; null when it holds out nobody (none, or 0%). */
export function holdoutPlan(holdout: HoldoutSpec | undefined, workflowId: string): HoldoutPlan | null {
  if (!holdout || !(holdout.percent > 0)) return null;
  // Salts no split step's can equal (a split's is `<workflow id>\0<step>` or `seed\0<seed>`): a split named "holdout"
  // would otherwise send every held-out user down the same path.
  const seed = fnv1a(holdout.seed === undefined ? `holdout\u0000workflow\u0000${workflowId}` : `holdout\u0000seed\u0000${holdout.seed}`);
  const maskSeeds = Array.from({ length: HOLDOUT_MASKS }, (_, j) => mix(0x10000 + j, seed));
  return { seed, maskSeeds, bound: Math.round((holdout.percent / 100) * 4294967296) };
}

/** Which of the plan's masks the block of `user` (its upper 16 bits) uses. */
export function maskOf(plan: HoldoutPlan, block: number): number {
  return mix(block, plan.seed) & (HOLDOUT_MASKS - 1);
}

/** Whether `user` is in the holdout group. */
export function isHeldOut(plan: HoldoutPlan, user: number): boolean {
  return mix(user & 0xffff, plan.maskSeeds[maskOf(plan, user >>> 16)]) < plan.bound;
}

/** The lower 16 bits held out by mask `j`, ascending. */
export function maskLows(plan: HoldoutPlan, j: number): Uint32Array {
  const out = new Uint32Array(0x10000);
  const salt = plan.maskSeeds[j];
  let held = 0;
  for (let low = 0; low < 0x10000; low++) if (mix(low, salt) < plan.bound) out[held++] = low;
  return out.subarray(0, held);
}

/** The held-out users among `ids`, in their order (sorted ids give sorted ids): one pass over a typed array. */
export function heldOutIds(plan: HoldoutPlan, ids: Uint32Array): Uint32Array {
  const out: number[] = [];
  for (let i = 0; i < ids.length; i++) if (isHeldOut(plan, ids[i])) out.push(ids[i]);
  return Uint32Array.from(out);
}

/** Whether two definitions hold out the same users (a running instance keeps its groups: see submitUpdateWorkflow). */
export function sameHoldout(a: HoldoutSpec | undefined, b: HoldoutSpec | undefined): boolean {
  const share = (h: HoldoutSpec | undefined) => (h && h.percent > 0 ? h.percent : 0);
  return share(a) === share(b) && (share(a) === 0 || a?.seed === b?.seed);
}
