// Sampled audience estimates that say how good they are. When a condition must be evaluated user by user over more
// users than one request may evaluate, the users are a uniform random sample (without replacement) of the users it
// can match, and the count comes with a Wilson score interval (with continuity correction) for the share that
// matches, scaled to those users. Sampling without replacement only narrows the spread, so the interval is, if
// anything, wider than it needs to be; and it never leaves the bounds the sample proves (the matches seen are
// certain, so are the non-matches).

import { RoaringBitmap32 } from '../crowd/bitmap';

/** The confidence of every sampled estimate's interval. */
export const AUDIENCE_CONFIDENCE = 0.95;
/** The standard normal quantile of (1 + AUDIENCE_CONFIDENCE) / 2. */
const Z = 1.959963984540054;

export type CountInterval = {
  /** The estimate: the share matching in the sample times the population. */
  count: number;
  low: number;
  high: number;
  /** How likely the true count lies in [low, high]: 1 when every user was evaluated. */
  confidence: number;
};

/** `n` distinct ranks drawn uniformly from 0 … population − 1, ascending (Floyd's algorithm: n draws, no rejections). */
export function sampleRanks(population: number, n: number, random: () => number): Uint32Array {
  if (n >= population) return Uint32Array.from({ length: population }, (_, rank) => rank);
  const chosen = new Set<number>();
  for (let bound = population - n; bound < population; bound++) {
    const rank = Math.floor(random() * (bound + 1));
    chosen.add(chosen.has(rank) ? bound : rank);
  }
  return Uint32Array.from(chosen).sort();
}

const BLOCK = 65_536;

/**
 * The users of `bitmap` at ascending ranks, read one block of 65,536 IDs (one roaring container) at a time: `select`
 * on the whole bitmap walks every container before the rank, 5 µs a user over the 2,048 containers of 2^27 IDs.
 */
export class UsersByRank {
  private key: number;
  private before = 0;
  private size: number;
  private block: RoaringBitmap32 | null = null;

  constructor(private readonly bitmap: RoaringBitmap32) {
    this.key = bitmap.isEmpty ? 0 : Math.floor(bitmap.minimum() / BLOCK);
    this.size = this.cardinality();
  }

  private cardinality(): number {
    return this.bitmap.rangeCardinality(this.key * BLOCK, (this.key + 1) * BLOCK);
  }

  /** The user at `rank`, never lower than the rank asked before it. */
  at(rank: number): number {
    while (rank >= this.before + this.size) {
      this.before += this.size;
      this.key++;
      this.size = this.cardinality();
      this.block?.dispose();
      this.block = null;
    }
    if (!this.block) {
      const range = new RoaringBitmap32().addRange(this.key * BLOCK, (this.key + 1) * BLOCK);
      this.block = RoaringBitmap32.and(this.bitmap, range);
      range.dispose();
    }
    return this.block.select(rank - this.before)!;
  }

  dispose(): void {
    this.block?.dispose();
  }
}

/** A count known exactly (a bitmap plan, or every user evaluated). */
export function exactCount(count: number): CountInterval {
  return { count, low: count, high: count, confidence: 1 };
}

/**
 * How many of `population` users match, from `matched` matches among `evaluated` users drawn uniformly from them.
 * All of them evaluated: the exact count, low = high = count.
 */
export function countInterval(matched: number, evaluated: number, population: number): CountInterval {
  if (evaluated >= population) return exactCount(matched);
  const n = evaluated;
  const share = matched / n;
  const zz = Z * Z;
  const denominator = 2 * (n + zz);
  const lowShare = matched === 0 ? 0 : (2 * n * share + zz - 1 - Z * Math.sqrt(zz - 2 - 1 / n + 4 * share * (n * (1 - share) + 1))) / denominator;
  const highShare = matched === n ? 1 : (2 * n * share + zz + 1 + Z * Math.sqrt(zz + 2 - 1 / n + 4 * share * (n * (1 - share) - 1))) / denominator;
  const mostPossible = population - (n - matched); // the users seen not to match are not in the count
  return {
    count: Math.round(share * population),
    low: Math.max(matched, Math.floor(Math.max(0, lowShare) * population)),
    high: Math.min(mostPossible, Math.ceil(Math.min(1, highShare) * population)),
    confidence: AUDIENCE_CONFIDENCE,
  };
}
