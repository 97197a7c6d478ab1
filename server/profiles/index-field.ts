// The index of one attribute path (a top-level key or a dotted path into nested objects) over a tenant's users.
// Encodings (docs/profiles.md "The profile index"):
// - presence: every user whose profile has the path (any value, objects included) — has(profile.a.b);
// - strings: an equality bitmap per distinct value, up to the tenant's maxIndexedValuesPerAttribute values per path;
//   past that the path is "high-cardinality": its strings move to a per-user map and equality on it is a scan of that map;
// - booleans: a bitmap for true and one for false;
// - numbers: fixed point, value × 10^scale as an integer in a bit-sliced index (sign + magnitude). The scale is the
//   fewest decimals (0 … MAX_SCALE) that hold every value of the path exactly and grows when a value needs more.
//   A number that no scale ≤ MAX_SCALE holds exactly (1/3, 1e-9, 1e300) is kept per user as an "other" value;
//   comparisons add a scan of those few to the bitmap answer;
// - strings that cel-js reads as timestamps (timestamp(profile.x)) also go, as epoch milliseconds, into a second
//   bit-sliced index, so timestamp comparisons are range queries too;
// - lists (and numbers outside fixed point) are kept per user as JSON values ("others").
import roaring, { type ReadonlyRoaringBitmap32, type RoaringBitmap32 } from 'roaring';
import { BitmapEdits, BitSlicedIndex, MAX_MAGNITUDE } from './index-bsi';
import { DEFAULT_LIMITS } from '../limits/limits';
import { celTimestampMs } from '../../core/profile-paths';

const { RoaringBitmap32: Bitmap } = roaring;

/**
 * Distinct strings per path with an equality bitmap each unless the tenant's limits say otherwise
 * (maxIndexedValuesPerAttribute); more makes the path high-cardinality (per-user map).
 */
export const MAX_DISTINCT_STRINGS = DEFAULT_LIMITS.maxIndexedValuesPerAttribute;
/** What one index of a tenant shares with its paths: the distinct strings a path may keep an equality bitmap for. */
export type IndexSettings = { indexedValues: number };

/**
 * In-memory costs beyond what the bitmaps serialize to, from the growth of the server's RSS (Node 20): an empty
 * roaring bitmap costs ~280 bytes of native object and JS wrapper, and one holding a container ~600 more than its
 * serialized size (500 paths × 1,000 one-user values grew it by 357 MB: ~710 bytes a value with its key); a Map
 * entry ~60 bytes, and a one-byte string its length plus a ~16-byte header.
 */
const EMPTY_BITMAP_BYTES = 300;
const BITMAP_OVERHEAD_BYTES = 600;
/** What a portable serialization of an empty bitmap takes (its header). */
const EMPTY_PORTABLE_BYTES = 8;
const MAP_ENTRY_BYTES = 60;
const STRING_HEADER_BYTES = 16;
/** Decimals kept exactly in fixed point. */
export const MAX_SCALE = 6;

export type Comparison = '<' | '<=' | '>' | '>=' | '==';

/** The fixed-point integer of `value` at `scale`, or null when that scale does not hold it exactly. */
function fixedPoint(value: number, scale: number): number | null {
  const n = Math.round(value * 10 ** scale);
  return Math.abs(n) <= MAX_MAGNITUDE && n / 10 ** scale === value ? n : null;
}

/** The fewest decimals holding `value` exactly, or null. */
export function scaleOf(value: number): number | null {
  for (let scale = 0; scale <= MAX_SCALE; scale++) if (fixedPoint(value, scale) !== null) return scale;
  return null;
}

/**
 * Integer thresholds for comparing fixed-point integers n (value = n / 10^scale) with a number c: the largest
 * integer `atMost` with atMost / 10^scale ≤ c and the smallest `atLeast` with atLeast / 10^scale ≥ c. Division
 * is monotone in n, so value > c ⇔ n > atMost, value ≥ c ⇔ n ≥ atLeast, value == c ⇔ atLeast == atMost == n.
 */
export function thresholds(c: number, scale: number): { atMost: number; atLeast: number } {
  const unit = 10 ** scale;
  const limit = MAX_MAGNITUDE + 1;
  const clamp = (k: number) => Math.max(-limit, Math.min(limit, k));
  let atMost = clamp(Math.floor(c * unit));
  while (atMost < limit && (atMost + 1) / unit <= c) atMost++;
  while (atMost > -limit && atMost / unit > c) atMost--;
  let atLeast = clamp(Math.ceil(c * unit));
  while (atLeast > -limit && (atLeast - 1) / unit >= c) atLeast--;
  while (atLeast < limit && atLeast / unit < c) atLeast++;
  return { atMost, atLeast };
}

/** Integer comparison on a bit-sliced index, using the thresholds of c. */
function compareIndex(bsi: BitSlicedIndex, op: Comparison, c: number, scale: number, within: ReadonlyRoaringBitmap32): RoaringBitmap32 {
  if (Number.isNaN(c)) return new Bitmap();
  const { atMost, atLeast } = thresholds(c, scale);
  switch (op) {
    case '>':
      return bsi.greaterThan(atMost, within);
    case '>=':
      return bsi.greaterThan(atLeast - 1, within);
    case '<':
      return bsi.lessThan(atLeast, within);
    case '<=':
      return bsi.lessThan(atMost + 1, within);
    case '==':
      return atMost === atLeast ? bsi.equalTo(atMost, within) : new Bitmap();
  }
}

export function compareNumbers(actual: number, op: Comparison, c: number): boolean {
  switch (op) {
    case '>':
      return actual > c;
    case '>=':
      return actual >= c;
    case '<':
      return actual < c;
    case '<=':
      return actual <= c;
    case '==':
      return actual === c;
  }
}

/** Per-user values read to estimate a map's size: 10M e-mail addresses are not walked for a figure. */
const SIZE_SAMPLE = 1_000;

/** A per-user map's estimated bytes: its entries, and its values' sizes averaged over the first SIZE_SAMPLE. */
function perUserBytes<T>(values: Map<number, T>, valueBytes: (value: T) => number): number {
  if (values.size === 0) return 0;
  let sampled = 0;
  let sampleBytes = 0;
  for (const value of values.values()) {
    sampleBytes += valueBytes(value);
    if (++sampled === SIZE_SAMPLE) break;
  }
  return Math.round(values.size * (MAP_ENTRY_BYTES + sampleBytes / sampled));
}

export class FieldIndex {
  constructor(private readonly settings: IndexSettings = { indexedValues: MAX_DISTINCT_STRINGS }) {}

  readonly presence = new Bitmap();
  /** Users whose value here is an object (its keys are paths of their own). */
  readonly objects = new Bitmap();
  readonly strings = new Map<string, RoaringBitmap32>();
  /** Set once the path has more distinct strings than the settings index: its strings live here instead. */
  highCardinality: Map<number, string> | null = null;
  readonly trues = new Bitmap();
  readonly falses = new Bitmap();
  numbers = new BitSlicedIndex();
  scale = 0;
  times = new BitSlicedIndex();
  /** Lists, and numbers fixed point cannot hold: kept per user. */
  readonly others = new Map<number, unknown>();

  /** Queues indexing `value` for `user`; objects only mark the path (their keys are indexed as child paths). */
  add(edits: BitmapEdits, user: number, value: unknown): void {
    edits.add(this.presence, user);
    switch (typeof value) {
      case 'string':
        this.addString(edits, user, value);
        return;
      case 'boolean':
        edits.add(value ? this.trues : this.falses, user);
        return;
      case 'number': {
        const n = this.fixed(edits, value);
        if (n === null) this.others.set(user, value);
        else this.numbers.set(edits, user, n);
        return;
      }
      default:
        if (value !== null && typeof value === 'object' && !Array.isArray(value)) edits.add(this.objects, user);
        else this.others.set(user, value);
    }
  }

  remove(edits: BitmapEdits, user: number, value: unknown): void {
    edits.remove(this.presence, user);
    switch (typeof value) {
      case 'string': {
        if (this.highCardinality) this.highCardinality.delete(user);
        else {
          const users = this.strings.get(value);
          if (users) edits.remove(users, user);
        }
        const ms = celTimestampMs(value);
        if (ms !== null) this.times.unset(edits, user, ms);
        return;
      }
      case 'boolean':
        edits.remove(value ? this.trues : this.falses, user);
        return;
      case 'number': {
        const n = fixedPoint(value, this.scale);
        if (n === null) this.others.delete(user);
        else this.numbers.unset(edits, user, n);
        return;
      }
      default:
        if (value !== null && typeof value === 'object' && !Array.isArray(value)) edits.remove(this.objects, user);
        else this.others.delete(user);
    }
  }

  private addString(edits: BitmapEdits, user: number, value: string): void {
    if (!this.highCardinality && !this.strings.has(value) && this.strings.size >= this.settings.indexedValues) this.becomeHighCardinality(edits);
    if (this.highCardinality) this.highCardinality.set(user, value);
    else {
      let users = this.strings.get(value);
      if (!users) this.strings.set(value, (users = new Bitmap()));
      edits.add(users, user);
    }
    const ms = celTimestampMs(value);
    if (ms !== null) this.times.set(edits, user, ms);
  }

  /** Moves every string of the path into the per-user map (pending edits first, so no queued user is lost). */
  private becomeHighCardinality(edits: BitmapEdits): void {
    edits.apply();
    const byUser = new Map<number, string>();
    for (const [value, users] of this.strings) for (const user of users.toUint32Array()) byUser.set(user, value);
    this.strings.clear();
    this.highCardinality = byUser;
  }

  /**
   * After the settings changed: a path with more distinct strings than they index now moves them to the per-user map,
   * and a high-cardinality path whose strings now fit gets its equality bitmaps back.
   */
  fitIndexedValues(): void {
    const edits = new BitmapEdits();
    if (!this.highCardinality) {
      if (this.strings.size > this.settings.indexedValues) this.becomeHighCardinality(edits);
      return;
    }
    const byValue = new Map<string, number[]>();
    for (const [user, value] of this.highCardinality) {
      let users = byValue.get(value);
      if (!users) {
        if (byValue.size >= this.settings.indexedValues) return; // still too many: stays a per-user map
        byValue.set(value, (users = []));
      }
      users.push(user);
    }
    for (const [value, users] of byValue) this.strings.set(value, Bitmap.from(users));
    this.highCardinality = null;
  }

  /**
   * An estimate of what the path holds in memory: its bitmaps (serialized size plus each bitmap's own overhead), the
   * keys of its equality bitmaps, and its per-user values (high-cardinality strings, lists, odd numbers).
   */
  memoryBytes(): number {
    let bytes = 0;
    for (const bitmap of this.bitmaps()) {
      const serialized = bitmap.getSerializationSizeInBytes('portable');
      bytes += serialized <= EMPTY_PORTABLE_BYTES ? EMPTY_BITMAP_BYTES : serialized + BITMAP_OVERHEAD_BYTES;
    }
    for (const value of this.strings.keys()) bytes += MAP_ENTRY_BYTES + STRING_HEADER_BYTES + value.length;
    if (this.highCardinality) bytes += perUserBytes(this.highCardinality, (value) => STRING_HEADER_BYTES + value.length);
    bytes += perUserBytes(this.others, (value) => (typeof value === 'number' ? 0 : STRING_HEADER_BYTES + JSON.stringify(value).length));
    return bytes;
  }

  /** The fixed-point integer of `value`, rescaling the path when it needs more decimals; null when none holds it. */
  private fixed(edits: BitmapEdits, value: number): number | null {
    // Integers need no decimals: the common case skips the search for a scale.
    if (Number.isInteger(value)) {
      const n = value * 10 ** this.scale;
      if (Math.abs(n) <= MAX_MAGNITUDE) return n;
    }
    const needed = scaleOf(value);
    if (needed === null) return null;
    if (needed > this.scale) this.rescale(edits, needed);
    return fixedPoint(value, this.scale);
  }

  /** Re-encodes every number of the path at a larger scale (rare: at most MAX_SCALE times per path). */
  private rescale(edits: BitmapEdits, scale: number): void {
    edits.apply();
    const previous = this.scale;
    const factor = 10 ** (scale - previous);
    const values = this.numbers.read(this.numbers.exists);
    this.numbers = new BitSlicedIndex();
    this.scale = scale;
    for (const [user, n] of values) {
      const rescaled = n * factor;
      // Past 2^53 the value is no longer exact in fixed point: it joins the per-user values (as remove() expects).
      if (Math.abs(rescaled) <= MAX_MAGNITUDE) this.numbers.set(edits, user, rescaled);
      else this.others.set(user, n / 10 ** previous);
    }
    edits.apply();
  }

  /** Users of `within` whose value equals `value` (CEL equality: never across types; ints equal doubles). */
  equals(value: string | number | boolean, within: ReadonlyRoaringBitmap32): RoaringBitmap32 {
    switch (typeof value) {
      case 'string': {
        if (!this.highCardinality) {
          const users = this.strings.get(value);
          return users ? Bitmap.and(within, users) : new Bitmap();
        }
        return this.scan(this.highCardinality, (actual) => actual === value, within);
      }
      case 'boolean':
        return Bitmap.and(within, value ? this.trues : this.falses);
      case 'number':
        return this.compare('==', value, within);
    }
  }

  /** The path's distinct string values (a scan of the per-user map once the path is high-cardinality). */
  distinctStrings(): Iterable<string> {
    return this.highCardinality ? new Set(this.highCardinality.values()) : this.strings.keys();
  }

  /** Users of `within` whose value is a number that compares true with c. */
  compare(op: Comparison, c: number, within: ReadonlyRoaringBitmap32): RoaringBitmap32 {
    const matched = compareIndex(this.numbers, op, c, this.scale, within);
    if (this.others.size > 0) matched.orInPlace(this.scan(this.others, (actual) => typeof actual === 'number' && compareNumbers(actual, op, c), within));
    return matched;
  }

  /** Users of `within` whose value is a timestamp string comparing true with `ms`. */
  compareTime(op: Comparison, ms: number, within: ReadonlyRoaringBitmap32): RoaringBitmap32 {
    return compareIndex(this.times, op, ms, 0, within);
  }

  /** The per-user fallback: a JS loop over a map (no bitmap probe per user), bounded by the users it holds. */
  private scan<T>(values: Map<number, T>, test: (value: T) => boolean, within: ReadonlyRoaringBitmap32): RoaringBitmap32 {
    const matched: number[] = [];
    if (within.size < values.size) {
      for (const user of within.toUint32Array()) {
        const value = values.get(user);
        if (value !== undefined && test(value)) matched.push(user);
      }
      return Bitmap.from(matched);
    }
    for (const [user, value] of values) if (test(value)) matched.push(user);
    return Bitmap.and(within, Bitmap.from(matched));
  }

  /** Every bitmap of the path (for sizes and snapshots). */
  bitmaps(): RoaringBitmap32[] {
    return [this.presence, this.objects, this.trues, this.falses, ...this.strings.values(), ...this.numbers.bitmaps(), ...this.times.bitmaps()];
  }
}
