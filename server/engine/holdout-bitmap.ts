// The held-out users of a bitmap by bitmap operations (core/model/holdout.ts): each 65,536-id block's users are
// ANDed with the mask its block uses, so a 10M-user start costs a few hundred container copies and one AND, not a
// hash per user. A sparse bitmap (few users per block, where copying masks would cost more than hashing) is hashed
// user by user with the same function. Used by the engine at entry and by the webhook cut.
import { RoaringBitmap32 } from '../crowd/bitmap';
import { HOLDOUT_MASKS, heldOutIds, maskLows, maskOf, type HoldoutPlan } from '../../core/model/holdout';

/** Below this many users per block spanned, hashing each user is cheaper than copying a mask per block. */
const DENSE_USERS_PER_BLOCK = 1024;

type PlanBitmaps = { masks: RoaringBitmap32[]; cover?: { first: number; last: number; bitmap: RoaringBitmap32 } };

/**
 * Per plan, built on first use: its masks as one-block bitmaps (block 0; 16 × 65,536 hashes, ~12 ms), and the masks
 * laid over the last span of blocks asked for, kept for the next call (a start asks once per partition, and every
 * partition's users span the same blocks, so a start builds it once). Keyed by what the plan holds out, not by the
 * plan object: every start builds its workflow's runtime, and so a new plan, afresh. A memo of a pure function (so
 * module-level, not app state); the least recently used of more than KEPT_PLANS plans is freed.
 */
const bitmapsOf = new Map<string, PlanBitmaps>();
const KEPT_PLANS = 4;

/** At most this many blocks are kept (8 KiB each at the densest masks: 16 MiB, a dense crowd of 2^27 users). */
const KEPT_COVER_BLOCKS = 2048;

function bitmaps(plan: HoldoutPlan): PlanBitmaps {
  const key = `${plan.seed}:${plan.bound}`;
  const out = bitmapsOf.get(key) ?? { masks: Array.from({ length: HOLDOUT_MASKS }, (_, j) => RoaringBitmap32.from(maskLows(plan, j))) };
  bitmapsOf.delete(key); // set again below: to the back of the Map's order, the most recently used
  bitmapsOf.set(key, out);
  if (bitmapsOf.size > KEPT_PLANS) {
    const [oldest, dropped] = bitmapsOf.entries().next().value!;
    bitmapsOf.delete(oldest);
    for (const mask of dropped.masks) mask.dispose();
    dropped.cover?.bitmap.dispose();
  }
  return out;
}

/** The users of `users` the plan holds out. */
export function heldOutUsers(plan: HoldoutPlan, users: RoaringBitmap32): RoaringBitmap32 {
  if (users.isEmpty) return new RoaringBitmap32();
  const first = users.minimum() >>> 16;
  const last = users.maximum() >>> 16;
  if (users.size < (last - first + 1) * DENSE_USERS_PER_BLOCK) return RoaringBitmap32.from(heldOutIds(plan, users.toUint32Array()));
  const { bitmap, kept } = cover(plan, first, last);
  const held = RoaringBitmap32.and(users, bitmap);
  if (!kept) bitmap.dispose();
  return held;
}

/** The plan's masks laid over blocks `first`…`last`; `kept` when it stays cached (the caller frees it otherwise). */
function cover(plan: HoldoutPlan, first: number, last: number): { bitmap: RoaringBitmap32; kept: boolean } {
  const planBitmaps = bitmaps(plan);
  const earlier = planBitmaps.cover;
  if (earlier && earlier.first <= first && earlier.last >= last) return { bitmap: earlier.bitmap, kept: true };
  const blocks: RoaringBitmap32[] = [];
  for (let block = first; block <= last; block++) blocks.push(RoaringBitmap32.addOffset(planBitmaps.masks[maskOf(plan, block)], block * 0x10000));
  const bitmap = RoaringBitmap32.orMany(blocks);
  // Freed now, not at V8's next collection: roaring reports its native memory to V8, and with a large heap the
  // collections that megabytes of dropped temporaries set off cost more than the start itself.
  for (const block of blocks) block.dispose();
  const kept = last - first < KEPT_COVER_BLOCKS;
  if (kept) {
    earlier?.bitmap.dispose();
    planBitmaps.cover = { first, last, bitmap };
  }
  return { bitmap, kept };
}
