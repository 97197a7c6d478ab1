// A bit-sliced index of signed integers over users, as Pilosa/FeatureBase keep integer fields: an existence
// ("not null") bitmap, a sign bitmap and one bitmap per magnitude bit (base-2 bit slices), compared with O'Neil and
// Quass's bit-sliced range algorithm. A comparison costs about two bitmap operations per bit of depth, never a scan.
import roaring, { type ReadonlyRoaringBitmap32, type RoaringBitmap32 } from 'roaring';

const { RoaringBitmap32: Bitmap } = roaring;

/** Magnitudes up to 2^53 − 1: every integer a double holds exactly. */
export const MAX_MAGNITUDE = Number.MAX_SAFE_INTEGER;

const TWO_32 = 2 ** 32;

/**
 * Bit `i` of a non-negative integer up to 2^53: 32-bit operators on its low or high word (a value past 32 bits, such
 * as a timestamp in ms, cannot go through them whole). Both words are exact: % and / by 2^32 lose nothing below 2^53.
 */
function bitOf(value: number, i: number): number {
  return i < 32 ? ((value % TWO_32) >>> i) & 1 : (Math.floor(value / TWO_32) >>> (i - 32)) & 1;
}

function depthOf(magnitude: number): number {
  return magnitude < TWO_32 ? 32 - Math.clz32(magnitude) : 64 - Math.clz32(Math.floor(magnitude / TWO_32));
}

/** Pending bitmap edits of one batch, applied as removeMany/addMany per bitmap (removes first). */
export class BitmapEdits {
  private readonly edits = new Map<RoaringBitmap32, { add: number[]; remove: number[] }>();

  private of(bitmap: RoaringBitmap32) {
    let edit = this.edits.get(bitmap);
    if (!edit) this.edits.set(bitmap, (edit = { add: [], remove: [] }));
    return edit;
  }

  add(bitmap: RoaringBitmap32, user: number): void {
    this.of(bitmap).add.push(user);
  }

  remove(bitmap: RoaringBitmap32, user: number): void {
    this.of(bitmap).remove.push(user);
  }

  /** A batch holds each user once (callers coalesce), so removes-then-adds per bitmap is the batch's net effect. */
  apply(): void {
    for (const [bitmap, { add, remove }] of this.edits) {
      if (remove.length > 0) bitmap.removeMany(remove);
      if (add.length > 0) bitmap.addMany(add);
    }
    this.edits.clear();
  }
}

export class BitSlicedIndex {
  readonly exists: RoaringBitmap32;
  readonly negative: RoaringBitmap32;
  /** slices[i]: users whose magnitude has bit i set. */
  readonly slices: RoaringBitmap32[];

  constructor(exists = new Bitmap(), negative = new Bitmap(), slices: RoaringBitmap32[] = []) {
    this.exists = exists;
    this.negative = negative;
    this.slices = slices;
  }

  get depth(): number {
    return this.slices.length;
  }

  /** Queues `user` = `value` (an integer with |value| ≤ 2^53 − 1); the user must not hold a value already. */
  set(edits: BitmapEdits, user: number, value: number): void {
    const magnitude = Math.abs(value);
    const depth = depthOf(magnitude);
    while (this.slices.length < depth) this.slices.push(new Bitmap());
    edits.add(this.exists, user);
    if (value < 0) edits.add(this.negative, user);
    this.eachBit(magnitude, (i) => edits.add(this.slices[i], user));
  }

  /** Queues removing `user`, whose value is `value`. */
  unset(edits: BitmapEdits, user: number, value: number): void {
    const magnitude = Math.abs(value);
    edits.remove(this.exists, user);
    if (value < 0) edits.remove(this.negative, user);
    this.eachBit(magnitude, (i) => edits.remove(this.slices[i], user));
  }

  /**
   * Calls `visit` with the index of every set bit of `magnitude`, word by word with 32-bit operators. (Bit by bit
   * with powers of two, a 1M-profile import with a timestamp attribute spent 110 of its 135 s here.)
   */
  private eachBit(magnitude: number, visit: (i: number) => void): void {
    for (let i = 0, m = magnitude % TWO_32; m !== 0; i++, m >>>= 1) if (m & 1) visit(i);
    for (let i = 32, m = Math.floor(magnitude / TWO_32); m !== 0; i++, m >>>= 1) if (m & 1) visit(i);
  }

  /** Users of `within` with a value > k (k an integer; any magnitude). */
  greaterThan(k: number, within: ReadonlyRoaringBitmap32): RoaringBitmap32 {
    const present = Bitmap.and(within, this.exists);
    const positive = Bitmap.andNot(present, this.negative);
    if (k >= 0) {
      present.dispose();
      return this.magnitudeAbove(k, positive);
    }
    // every non-negative value, and negatives whose magnitude is below |k|
    const below = this.magnitudeBelow(-k, present.andInPlace(this.negative));
    positive.orInPlace(below);
    below.dispose();
    return positive;
  }

  /** Users of `within` with a value < k. */
  lessThan(k: number, within: ReadonlyRoaringBitmap32): RoaringBitmap32 {
    const present = Bitmap.and(within, this.exists);
    const negatives = Bitmap.and(present, this.negative);
    if (k <= 0) {
      present.dispose();
      return this.magnitudeAbove(-k, negatives);
    }
    const below = this.magnitudeBelow(k, present.andNotInPlace(this.negative));
    negatives.orInPlace(below);
    below.dispose();
    return negatives;
  }

  /** Users of `within` with a value == k. */
  equalTo(k: number, within: ReadonlyRoaringBitmap32): RoaringBitmap32 {
    const present = Bitmap.and(within, this.exists);
    const sameSign = k < 0 ? present.andInPlace(this.negative) : present.andNotInPlace(this.negative);
    const magnitude = Math.abs(k);
    if (magnitude >= 2 ** this.depth) {
      if (magnitude === 0) return sameSign;
      sameSign.dispose();
      return new Bitmap();
    }
    const equal = sameSign;
    for (let i = this.depth - 1; i >= 0 && !equal.isEmpty; i--) {
      if (bitOf(magnitude, i)) equal.andInPlace(this.slices[i]);
      else equal.andNotInPlace(this.slices[i]);
    }
    return equal;
  }

  // The two scans below own `candidates` (narrowed in place) and dispose it and every part they add once used: see
  // evaluatePlan (server/conditions/plan-eval.ts) on why intermediates are freed at once.

  /** Users of `candidates` (all present, one sign) whose magnitude is > m. */
  private magnitudeAbove(m: number, candidates: RoaringBitmap32): RoaringBitmap32 {
    if (m >= 2 ** this.depth) {
      candidates.dispose();
      return new Bitmap();
    }
    const above = new Bitmap();
    const equal = candidates;
    for (let i = this.depth - 1; i >= 0 && !equal.isEmpty; i--) {
      if (bitOf(m, i)) equal.andInPlace(this.slices[i]);
      else {
        addDisposing(above, Bitmap.and(equal, this.slices[i]));
        equal.andNotInPlace(this.slices[i]);
      }
    }
    equal.dispose();
    return above;
  }

  /** Users of `candidates` (all present, one sign) whose magnitude is < m. */
  private magnitudeBelow(m: number, candidates: RoaringBitmap32): RoaringBitmap32 {
    if (m >= 2 ** this.depth) return candidates;
    const below = new Bitmap();
    const equal = candidates;
    for (let i = this.depth - 1; i >= 0 && !equal.isEmpty; i--) {
      if (bitOf(m, i)) {
        addDisposing(below, Bitmap.andNot(equal, this.slices[i]));
        equal.andInPlace(this.slices[i]);
      } else equal.andNotInPlace(this.slices[i]);
    }
    equal.dispose();
    return below;
  }

  /** The values of the users of `users` that have one: one AND per slice, no per-user bitmap probe. */
  read(users: ReadonlyRoaringBitmap32): Map<number, number> {
    const present = Bitmap.and(users, this.exists);
    const values = new Map<number, number>();
    if (present.isEmpty) return values;
    for (const user of present.toUint32Array()) values.set(user, 0);
    for (let i = 0; i < this.depth; i++) {
      const weight = 2 ** i;
      for (const user of Bitmap.and(present, this.slices[i]).toUint32Array()) values.set(user, values.get(user)! + weight);
    }
    for (const user of Bitmap.and(present, this.negative).toUint32Array()) values.set(user, -values.get(user)!);
    return values;
  }

  bitmaps(): RoaringBitmap32[] {
    return [this.exists, this.negative, ...this.slices];
  }
}

function addDisposing(into: RoaringBitmap32, part: RoaringBitmap32): void {
  into.orInPlace(part);
  part.dispose();
}
