// One tenant's profile index: a FieldIndex per attribute path, kept right by applying each committed change
// (the user's profile before and after it). It answers plan leaves over millions of users with bitmap operations,
// and reads profiles back for the per-user path (materialize), so nothing holds 10M profiles as JS objects.
import roaring, { type ReadonlyRoaringBitmap32, type RoaringBitmap32 } from 'roaring';
import { BitmapEdits } from './index-bsi';
import { FieldIndex, MAX_DISTINCT_STRINGS, type Comparison, type IndexSettings } from './index-field';
import { pathKey, segmentKey } from '../../core/profile-paths';

const { RoaringBitmap32: Bitmap } = roaring;

export type Attributes = Record<string, unknown>;
export type Scalar = string | number | boolean;
/** One committed change: the user's whole profile before (undefined: had none) and after (undefined: deleted). */
export type ProfileChange = { user: number; before?: Attributes; after?: Attributes };
/** A committed write relayed to the engine thread (server/profiles/index-store.ts): `afters` is the JSON of an array,
 * the profile of each of `users` after the write (null: deleted). */
export type RelayedProfileWrite = { users: Uint32Array; afters: string };

const isObject = (value: unknown): value is Attributes => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Every path of `attributes` (objects and their keys, recursively) with its value. */
function flatten(attributes: Attributes, out = new Map<string, { segments: string[]; value: unknown }>(), prefix: string[] = [], prefixKey = '') {
  for (const key in attributes) {
    const value = attributes[key];
    if (value === null || value === undefined || !Object.hasOwn(attributes, key)) continue;
    const segments = prefix.length === 0 ? [key] : [...prefix, key];
    const path = prefix.length === 0 ? pathKey(segments) : `${prefixKey}\u001f${pathKey([key])}`;
    out.set(path, { segments, value });
    if (isObject(value)) flatten(value, out, segments, path);
  }
  return out;
}

/** Whether the index holds `a` and `b` identically (objects only mark presence; their keys are diffed as paths). */
function sameIndexed(a: unknown, b: unknown): boolean {
  if (a === b) return true; // 0 and -0 included: both are fixed-point 0
  return isObject(a) && isObject(b);
}

export class ProfileIndex {
  /** Users with a stored profile (even an empty one). */
  readonly users = new Bitmap();
  /** Counts changes to the index: a result computed at one version is stale at the next. */
  version = 0;
  /** Plan results over every user of this index, by plan (server/profiles/index-plan.ts evaluateIndexedPlan). */
  readonly planResults = new Map<object, { version: number; crowds: readonly ReadonlyRoaringBitmap32[]; matched: RoaringBitmap32 }>();
  private readonly fields = new Map<string, FieldIndex & { segments: string[] }>();
  private byDepth: (FieldIndex & { segments: string[] })[] | null = null;
  /** Shared with every path: the distinct strings a path keeps equality bitmaps for (the tenant's limit). */
  private readonly settings: IndexSettings = { indexedValues: MAX_DISTINCT_STRINGS };

  get size(): number {
    return this.users.size;
  }

  /** The distinct attribute paths some user holds (nested keys counted as paths of their own). */
  get pathCount(): number {
    return this.fields.size;
  }

  get indexedValueLimit(): number {
    return this.settings.indexedValues;
  }

  /**
   * Applies the tenant's maxIndexedValuesPerAttribute: paths past a lowered limit become high-cardinality now, and
   * high-cardinality paths that fit a raised one get their equality bitmaps back. Only the encoding changes, not
   * what any query answers.
   */
  setIndexedValueLimit(limit: number): void {
    if (limit !== this.settings.indexedValues) this.fitIndexedValues(limit);
  }

  /** The same for every path whatever limit the index had (a snapshot does not say which limit encoded it). */
  fitIndexedValues(limit: number): void {
    this.settings.indexedValues = limit;
    for (const field of this.fields.values()) field.fitIndexedValues();
  }

  /** Applies committed changes in order (a user changed twice counts as one change from the first before to the last after). */
  apply(changes: Iterable<ProfileChange>): void {
    const net = new Map<number, ProfileChange>();
    for (const change of changes) {
      const earlier = net.get(change.user);
      net.set(change.user, earlier ? { user: change.user, before: earlier.before, after: change.after } : change);
    }
    this.version++;
    const edits = new BitmapEdits();
    const touched = new Set<string>();
    for (const { user, before, after } of net.values()) {
      if (!before && after) {
        // A new profile (an import's common case): every path is added, nothing to diff.
        this.addPaths(edits, user, after, null, '');
        edits.add(this.users, user);
        continue;
      }
      const old = before ? flatten(before) : null;
      const next = after ? flatten(after) : null;
      if (old) {
        for (const [key, { value }] of old) {
          const replacement = next?.get(key);
          if (replacement && sameIndexed(value, replacement.value)) continue;
          this.fields.get(key)?.remove(edits, user, value);
          touched.add(key);
        }
      }
      if (next) {
        for (const [key, { segments, value }] of next) {
          const previous = old?.get(key);
          if (previous && sameIndexed(previous.value, value)) continue;
          this.field(key, segments).add(edits, user, value);
        }
      }
      if (after && !before) edits.add(this.users, user);
      if (!after && before) edits.remove(this.users, user);
    }
    edits.apply();
    for (const key of touched) {
      if (this.fields.get(key)?.presence.isEmpty) {
        this.fields.delete(key);
        this.byDepth = null;
      }
    }
  }

  /** Queues indexing every path of `attributes` (nested under `prefix`) for `user`, without building a path map. */
  private addPaths(edits: BitmapEdits, user: number, attributes: Attributes, prefix: string[] | null, prefixKey: string): void {
    for (const key in attributes) {
      const value = attributes[key];
      if (value === null || value === undefined || !Object.hasOwn(attributes, key)) continue;
      const segment = segmentKey(key);
      const path = prefix === null ? segment : `${prefixKey}\u001f${segment}`;
      const field = this.fields.get(path) ?? this.field(path, prefix === null ? [key] : [...prefix, key]);
      field.add(edits, user, value);
      if (isObject(value)) this.addPaths(edits, user, value, prefix === null ? [key] : [...prefix, key], path);
    }
  }

  /** Replaces one user's profile (convenience for tests and small callers: reads the old one back first). */
  set(user: number, attributes: Attributes): void {
    this.apply([{ user, before: this.get(user), after: attributes }]);
  }

  remove(user: number): void {
    const before = this.get(user);
    if (before) this.apply([{ user, before }]);
  }

  get(user: number): Attributes | undefined {
    return this.materialize(Bitmap.of(user)).get(user);
  }

  private field(key: string, segments: string[]): FieldIndex {
    let field = this.fields.get(key);
    if (!field) {
      this.fields.set(key, (field = Object.assign(new FieldIndex(this.settings), { segments })));
      this.byDepth = null;
    }
    return field;
  }

  /** An empty index for `segments`, for a snapshot being read back. */
  restorePath(segments: string[]): FieldIndex {
    return this.field(pathKey(segments), segments);
  }

  /** The index of a path key, if any user has the path. */
  path(key: string): FieldIndex | undefined {
    return this.fields.get(key);
  }

  paths(): Array<{ key: string; segments: string[]; field: FieldIndex }> {
    return [...this.fields].map(([key, field]) => ({ key, segments: field.segments, field }));
  }

  has(key: string, within: ReadonlyRoaringBitmap32): RoaringBitmap32 {
    const field = this.fields.get(key);
    return field ? Bitmap.and(within, field.presence) : new Bitmap();
  }

  equals(key: string, value: Scalar, within: ReadonlyRoaringBitmap32 = this.users): RoaringBitmap32 {
    return this.fields.get(key)?.equals(value, within) ?? new Bitmap();
  }

  compare(key: string, op: Comparison, value: number, within: ReadonlyRoaringBitmap32 = this.users): RoaringBitmap32 {
    return this.fields.get(key)?.compare(op, value, within) ?? new Bitmap();
  }

  compareTime(key: string, op: Comparison, ms: number, within: ReadonlyRoaringBitmap32 = this.users): RoaringBitmap32 {
    return this.fields.get(key)?.compareTime(op, ms, within) ?? new Bitmap();
  }

  /**
   * The profiles of `users` (those that have one), read back from the index: per path one AND per distinct string,
   * two for booleans, one per bit slice for numbers. `topKeys` limits it to the attributes a condition reads.
   */
  materialize(users: ReadonlyRoaringBitmap32, topKeys?: readonly string[]): Map<number, Attributes> {
    const out = new Map<number, Attributes>();
    const present = Bitmap.and(users, this.users);
    if (present.isEmpty) return out;
    for (const user of present.toUint32Array()) out.set(user, {});
    const wanted = topKeys ? new Set(topKeys) : null;
    for (const field of this.fieldsByDepth()) {
      if (wanted && !wanted.has(field.segments[0])) continue;
      const here = Bitmap.and(present, field.presence);
      if (here.isEmpty) continue;
      const put = (user: number, value: unknown) => placeAt(out.get(user)!, field.segments, value);
      for (const user of Bitmap.and(here, field.objects).toUint32Array()) put(user, {});
      for (const user of Bitmap.and(here, field.trues).toUint32Array()) put(user, true);
      for (const user of Bitmap.and(here, field.falses).toUint32Array()) put(user, false);
      if (field.highCardinality) {
        for (const user of here.toUint32Array()) {
          const value = field.highCardinality.get(user);
          if (value !== undefined) put(user, value);
        }
      } else {
        for (const [value, holders] of field.strings) for (const user of Bitmap.and(here, holders).toUint32Array()) put(user, value);
      }
      const unit = 10 ** field.scale;
      for (const [user, n] of field.numbers.read(here)) put(user, n / unit);
      if (field.others.size > 0) {
        for (const user of here.toUint32Array()) if (field.others.has(user)) put(user, structuredClone(field.others.get(user)));
      }
    }
    return out;
  }

  private fieldsByDepth() {
    this.byDepth ??= [...this.fields.values()].sort((a, b) => a.segments.length - b.segments.length);
    return this.byDepth;
  }

  /** Drops everything (tenant deleted). */
  clear(): void {
    this.version++;
    this.users.clear();
    this.fields.clear();
    this.byDepth = null;
  }

  /** Serialized bytes of every bitmap: what the index holds in roaring containers (JS maps of per-user values aside). */
  bitmapBytes(): number {
    let bytes = this.users.getSerializationSizeInBytes('portable');
    for (const field of this.fields.values()) for (const bitmap of field.bitmaps()) bytes += bitmap.getSerializationSizeInBytes('portable');
    return bytes;
  }
}

function placeAt(root: Attributes, segments: string[], value: unknown): void {
  let target = root;
  for (let i = 0; i < segments.length - 1; i++) {
    const next = target[segments[i]];
    if (!isObject(next)) return; // the parent is not an object for this user: cannot happen for indexed paths
    target = next;
  }
  target[segments[segments.length - 1]] = value;
}
