// The bitmap arithmetic of frequency caps (issue 37 §2), with no I/O: what one cap counted in one window is a few
// bitmaps, never a row per user. Level i holds the users who got more than i deliveries in the window, so the last
// level (i = max − 1) is the users at the cap. Deciding a move of any size is two bitmap operations (users AND at-cap:
// capped; users ANDNOT at-cap: delivered), and counting the delivered users in is one AND and one OR per level.
import { deserializeBitmap, RoaringBitmap32, serializeBitmap } from '../crowd/bitmap';

/** One cap's counters in one window: `levels[i]` = users with more than i deliveries; `levels.length` = the cap's maximum. */
export class CapLevels {
  constructor(readonly levels: RoaringBitmap32[]) {}

  static empty(max: number): CapLevels {
    return new CapLevels(Array.from({ length: max }, () => new RoaringBitmap32()));
  }

  /** Users who got the cap's maximum in this window already. */
  get atCap(): RoaringBitmap32 {
    return this.levels[this.levels.length - 1];
  }

  /** Counts one more delivery for each of `delivered`: level i gains those of them that were at level i − 1. */
  count(delivered: RoaringBitmap32): void {
    const { levels } = this;
    for (let i = levels.length - 1; i > 0; i--) {
      const promoted = RoaringBitmap32.and(levels[i - 1], delivered);
      if (!promoted.isEmpty) levels[i].orInPlace(promoted);
    }
    levels[0].orInPlace(delivered);
  }

  /** The same counters for a cap whose maximum changed: extra levels start empty, levels past the new maximum go. */
  resized(max: number): CapLevels {
    if (max === this.levels.length) return this;
    return new CapLevels(Array.from({ length: max }, (_, i) => this.levels[i] ?? new RoaringBitmap32()));
  }

  /** Framed: a u32 count of levels, then for each a u32 byte length and its portable roaring bytes. */
  encode(): Buffer<ArrayBuffer> {
    const parts = this.levels.map((level) => serializeBitmap(level));
    const out: Buffer<ArrayBuffer> = Buffer.alloc(4 + parts.reduce((sum, part) => sum + 4 + part.length, 0));
    let at = out.writeUInt32LE(parts.length, 0);
    for (const part of parts) {
      at = out.writeUInt32LE(part.length, at);
      at += Buffer.from(part.buffer, part.byteOffset, part.length).copy(out, at);
    }
    return out;
  }

  static decode(bytes: Uint8Array): CapLevels {
    const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const n = buffer.readUInt32LE(0);
    const levels: RoaringBitmap32[] = [];
    let at = 4;
    for (let i = 0; i < n; i++) {
      const length = buffer.readUInt32LE(at);
      at += 4;
      levels.push(deserializeBitmap(buffer.subarray(at, at + length)));
      at += length;
    }
    return new CapLevels(levels);
  }
}

/**
 * The decision for one move (a single user or ten million): who is skipped and who is delivered to, given the
 * windows of every cap that applies to it. `capped` is empty when nobody is at any of those caps.
 */
export function decideCapped(users: RoaringBitmap32, windows: readonly CapLevels[]): { delivered: RoaringBitmap32; capped: RoaringBitmap32 } {
  if (windows.length === 0) return { delivered: users, capped: new RoaringBitmap32() };
  const atCap = windows.length === 1 ? windows[0].atCap : RoaringBitmap32.orMany(windows.map((w) => w.atCap));
  const capped = RoaringBitmap32.and(users, atCap);
  if (capped.isEmpty) return { delivered: users, capped };
  return { delivered: RoaringBitmap32.andNot(users, atCap), capped };
}

/** Decides a move and counts its delivered users in every window: the whole cap step of one move. */
export function applyCaps(users: RoaringBitmap32, windows: readonly CapLevels[]): { delivered: RoaringBitmap32; capped: RoaringBitmap32 } {
  const decision = decideCapped(users, windows);
  if (!decision.delivered.isEmpty) for (const window of windows) window.count(decision.delivered);
  return decision;
}
