// A shard: the state of one instance inside one partition. One bitmap per step, entry-time buckets for delay and ttl
// steps (a few bitmaps per step, never one timestamp per user), edge counters and the next cron firing per timer step.
// The whole shard serializes into one checkpoint blob: a JSON header naming byte lengths, then portable roaring bytes.
import { RoaringBitmap32 } from '../crowd/bitmap';
import { isHeldOut, type HoldoutPlan } from '../../core/model/holdout';
import { encodeBitmapBlob, decodeBitmapBlob } from './bitmap-blob';
import { heldOutUsers } from './holdout-bitmap';

/** Bitmaps keyed by bucket end time (epoch ms): a user entered during the bucket that ends there. */
export type Buckets = Map<number, RoaringBitmap32>;

export class Shard {
  readonly steps = new Map<string, RoaringBitmap32>();
  /** Delay steps and branch steps with a timeout: users by entry bucket. */
  readonly delays = new Map<string, Buckets>();
  /** Steps with a ttl: users by the bucket of their entry (or last re-evaluation). */
  readonly ttls = new Map<string, Buckets>();
  readonly edges = new Map<string, number>();
  /** Timer steps: the next firing (epoch ms). */
  readonly cronNext = new Map<string, number>();
  /** Users who reached the workflow's goal, by the step they converted from (each user in one bitmap at most). */
  readonly converted = new Map<string, RoaringBitmap32>();
  /**
   * Users who met the exit criteria and left the journey, by the step they left from (each user in one bitmap at most:
   * an exited user does not enter again). Journaled as moves to EXITED (exit.ts), so replay rebuilds them.
   */
  readonly exited = new Map<string, RoaringBitmap32>();
  /** Users who entered the instance here (start crowd, crowd updates, event-triggered entries; a re-entry counts again). */
  entered = 0;
  /**
   * Engine time of the last change of step members no journal row carries (a crowd update; 0: none). Point-in-time
   * reads (as-of.ts) cross it by its CrowdChange row, or, for an update made before those were kept, cannot rebuild a
   * moment before it.
   */
  unjournaledAt = 0;
  /** Users of the holdout group who entered here (each once), and their entries (counted as `entered` is). */
  readonly holdout = new RoaringBitmap32();
  holdoutEntered = 0;
  /** Experiment split steps: per path (named by the step it leads to), the users who took it here (each once). */
  readonly paths = new Map<string, Map<string, RoaringBitmap32>>();

  constructor(
    readonly instanceId: string,
    readonly partition: number,
  ) {}

  step(name: string): RoaringBitmap32 {
    let bitmap = this.steps.get(name);
    if (!bitmap) this.steps.set(name, (bitmap = new RoaringBitmap32()));
    return bitmap;
  }

  countEdge(from: string | null, to: string, count: number): void {
    if (from === null || count === 0) return;
    const key = `${from}->${to}`;
    this.edges.set(key, (this.edges.get(key) ?? 0) + count);
  }

  /**
   * `users` (one user or a bitmap of `count`) entered the instance: counted, and those the workflow's holdout names
   * join the holdout group. The held-out users of a bitmap are found by bitmap operations (./holdout-bitmap.ts).
   */
  countEntry(users: RoaringBitmap32 | number, count: number, plan: HoldoutPlan | null): void {
    this.entered += count;
    if (!plan) return;
    if (typeof users === 'number') {
      if (!isHeldOut(plan, users)) return;
      this.holdout.add(users);
      this.holdoutEntered++;
      return;
    }
    const held = heldOutUsers(plan, users);
    this.holdout.orInPlace(held);
    this.holdoutEntered += held.size;
    held.dispose(); // a temporary of the start's size (see holdout-bitmap.ts)
  }

  /** `users` (one user or a bitmap) took the path of experiment `step` that leads to `path`. */
  tookPath(step: string, path: string, users: RoaringBitmap32 | number): void {
    let byPath = this.paths.get(step);
    if (!byPath) this.paths.set(step, (byPath = new Map()));
    const bitmap = byPath.get(path);
    if (!bitmap) byPath.set(path, typeof users === 'number' ? RoaringBitmap32.of(users) : users.clone());
    else if (typeof users === 'number') bitmap.add(users);
    else bitmap.orInPlace(users);
  }

  /** Users of `users` who reached the goal (from any step): one AND count per step they converted from. */
  convertedOf(users: RoaringBitmap32): number {
    let n = 0;
    for (const converted of this.converted.values()) n += converted.andCardinality(users);
    return n;
  }

  /** Users of the holdout group who reached the goal (from any step). */
  holdoutConverted(): number {
    return this.convertedOf(this.holdout);
  }

  /** Users `users` converted from `step` (the goal held for them there). */
  convert(step: string, users: RoaringBitmap32): void {
    const bitmap = this.converted.get(step);
    if (bitmap) bitmap.orInPlace(users);
    else this.converted.set(step, users.clone());
  }

  /** Every user who reached the goal (the union of the converted bitmaps). */
  convertedUsers(): RoaringBitmap32 {
    return RoaringBitmap32.orMany([...this.converted.values()]);
  }

  /** Every user of the shard (the union of its steps). */
  members(): RoaringBitmap32 {
    return RoaringBitmap32.orMany([...this.steps.values()]);
  }

  /** Users `users` left the journey from `step` by its exit criteria. */
  exit(step: string, users: RoaringBitmap32 | number): void {
    let bitmap = this.exited.get(step);
    if (!bitmap) this.exited.set(step, (bitmap = new RoaringBitmap32()));
    if (typeof users === 'number') bitmap.add(users);
    else bitmap.orInPlace(users);
  }

  /** Every user who left the journey by its exit criteria (the union of the exited bitmaps). */
  exitedUsers(): RoaringBitmap32 {
    return RoaringBitmap32.orMany([...this.exited.values()]);
  }

  /** Every user who has been in the instance and is not out of it by a crowd update: those in a step and those who exited. */
  everyone(): RoaringBitmap32 {
    return RoaringBitmap32.orMany([...this.steps.values(), ...this.exited.values()]);
  }

  /**
   * Frees every bitmap of a shard nobody reads any more: only for one read back for a moment (a stopped instance's
   * snapshot), never for a running instance's, which readers (exports, counts, point-in-time reads) may still hold.
   */
  dispose(): void {
    const buckets = [...this.delays.values(), ...this.ttls.values()].flatMap((byEnd) => [...byEnd.values()]);
    const paths = [...this.paths.values()].flatMap((byPath) => [...byPath.values()]);
    for (const bitmap of [...this.steps.values(), ...buckets, ...this.converted.values(), ...this.exited.values(), this.holdout, ...paths]) bitmap.dispose();
  }

  encode(): Buffer {
    return encodeBitmapBlob((put) => ({
      steps: [...this.steps].filter(([, b]) => b.size > 0).map(([name, b]) => [name, put(b)]),
      delays: bucketEntries(this.delays).map(([step, end, b]) => [step, end, put(b)]),
      ttls: bucketEntries(this.ttls).map(([step, end, b]) => [step, end, put(b)]),
      converted: [...this.converted].filter(([, b]) => b.size > 0).map(([step, b]) => [step, put(b)]),
      exited: [...this.exited].filter(([, b]) => b.size > 0).map(([step, b]) => [step, put(b)]),
      edges: Object.fromEntries(this.edges),
      cronNext: Object.fromEntries(this.cronNext),
      entered: this.entered,
      ...(this.unjournaledAt ? { unjournaledAt: this.unjournaledAt } : {}),
      ...(this.holdoutEntered > 0 ? { holdout: put(this.holdout), holdoutEntered: this.holdoutEntered } : {}),
      ...(this.paths.size > 0 ? { paths: [...this.paths].flatMap(([step, byPath]) => [...byPath].map(([path, b]) => [step, path, put(b)])) } : {}),
    }));
  }

  static decode(instanceId: string, partition: number, data: Uint8Array): Shard {
    const { header, take } = decodeBitmapBlob<{
      steps: [string, number][];
      delays: [string, number, number][];
      ttls: [string, number, number][];
      converted?: [string, number][];
      exited?: [string, number][];
      edges: Record<string, number>;
      cronNext: Record<string, number>;
      entered?: number;
      unjournaledAt?: number;
      holdout?: number;
      holdoutEntered?: number;
      paths?: [string, string, number][];
    }>(data);
    const shard = new Shard(instanceId, partition);
    for (const [name, length] of header.steps) shard.steps.set(name, take(length));
    for (const [step, end, length] of header.delays) bucketsOf(shard.delays, step).set(end, take(length));
    for (const [step, end, length] of header.ttls) bucketsOf(shard.ttls, step).set(end, take(length));
    for (const [step, length] of header.converted ?? []) shard.converted.set(step, take(length));
    for (const [step, length] of header.exited ?? []) shard.exited.set(step, take(length));
    if (header.holdout !== undefined) shard.holdout.orInPlace(take(header.holdout));
    shard.holdoutEntered = header.holdoutEntered ?? 0;
    for (const [step, path, length] of header.paths ?? []) shard.tookPath(step, path, take(length));
    for (const [key, count] of Object.entries(header.edges)) shard.edges.set(key, count);
    for (const [step, at] of Object.entries(header.cronNext)) shard.cronNext.set(step, at);
    // Checkpoints written before entries were counted: everyone in the shard entered once.
    shard.entered = header.entered ?? shard.members().size;
    shard.unjournaledAt = header.unjournaledAt ?? 0;
    return shard;
  }
}

export function bucketsOf(map: Map<string, Buckets>, step: string): Buckets {
  let buckets = map.get(step);
  if (!buckets) map.set(step, (buckets = new Map()));
  return buckets;
}

function bucketEntries(map: Map<string, Buckets>): [string, number, RoaringBitmap32][] {
  const out: [string, number, RoaringBitmap32][] = [];
  for (const [step, buckets] of map) for (const [end, bitmap] of buckets) if (bitmap.size > 0) out.push([step, end, bitmap]);
  return out;
}

/** Bucket width for a duration: 1/100 of it, between 1 s and 1 min (a user moves at most that late, never early). */
export function bucketWidth(durationMs: number): number {
  return Math.min(60_000, Math.max(1_000, Math.floor(durationMs / 100)));
}

/** The end of the bucket holding time `t`. */
export function bucketEnd(t: number, width: number): number {
  return Math.floor(t / width) * width + width;
}
