// In-memory runtime of a tenant: its running instances (workflow version + one shard per owned partition) and a
// lock per partition that serializes the partition's owner loop, its timers and instance operations.
import { RoaringBitmap32 } from '../crowd/bitmap';
import { TenantData } from './context';
import type { UserPartitioning } from './partitioning';
import { ShardLoader } from './recovery';
import { type FairTurns, Slices } from './slices';
import type { WorkflowRuntime } from './runtime';
import type { Shard } from './shard';
import type { Counts } from './types';
import type { ExperimentFigures } from '../../core/model/experiment';
import type { Database } from '../storage/database';

export class Mutex {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(work: () => Promise<T>): Promise<T> {
    const result = this.tail.then(work);
    this.tail = result.catch(() => undefined);
    return result;
  }
}

/** Runs `work` holding every given lock (taken in index order, so two callers never deadlock). */
export function withLocks<T>(locks: Mutex[], work: () => Promise<T>): Promise<T> {
  if (locks.length === 0) return work();
  const [first, ...rest] = locks;
  return first.run(() => withLocks(rest, work));
}

export interface InstanceRecord {
  id: string;
  tenantId: string;
  workflowId: string;
  version: number;
  crowdName: string;
}

export class InstanceRuntime {
  /** Indexed by partition; undefined for partitions this process does not own (yet). */
  readonly shards: (Shard | undefined)[];
  /**
   * Partitions whose shard was dropped after a commit that failed (it was ahead of the database) and is being rebuilt
   * from it: until then this instance's figures lack their users, and reads say so (server/engine/reads.ts).
   */
  readonly rebuilding = new Set<number>();

  constructor(
    readonly record: InstanceRecord,
    public workflow: WorkflowRuntime,
    partitions: number,
  ) {
    this.shards = new Array<Shard | undefined>(partitions).fill(undefined);
  }

  get id(): string {
    return this.record.id;
  }

  get tenantId(): string {
    return this.record.tenantId;
  }

  counts(): Counts {
    return countsOf(this.id, this.workflow, this.shards, Boolean(this.workflow.goal));
  }

  /** The shards' bitmaps of `step`: their union (unionInSlices) is the step's users. */
  stepBitmaps(step: string): RoaringBitmap32[] {
    return this.shards.flatMap((s) => (s?.steps.get(step) ? [s.steps.get(step)!] : []));
  }

  /** The holdout group: users held out on entering (the union of the shards'). */
  holdoutUsers(): RoaringBitmap32 {
    return RoaringBitmap32.orMany(this.shards.flatMap((s) => (s ? [s.holdout] : [])));
  }

  /** Users who left the journey from `step` by its exit criteria. */
  exitedUsers(step: string): RoaringBitmap32 {
    return RoaringBitmap32.orMany(this.shards.flatMap((s) => (s?.exited.get(step) ? [s.exited.get(step)!] : [])));
  }

  /** Users who reached the goal from `step`. */
  convertedUsers(step: string): RoaringBitmap32 {
    return RoaringBitmap32.orMany(this.shards.flatMap((s) => (s?.converted.get(step) ? [s.converted.get(step)!] : [])));
  }
}

export class TenantRuntime {
  readonly instances = new Map<string, InstanceRuntime>();
  readonly locks: Mutex[];
  readonly partitions: number;
  readonly data: TenantData;
  /** Rebuilds the shards of partitions taken together (at boot: all of them) from one journal pass per instance. */
  readonly shardLoader: ShardLoader;

  constructor(
    /** The storage the tenant's partitions, shards and instances are read from (its engine's). */
    readonly database: Database,
    readonly id: string,
    /** How its users map to its partitions (partitioning.ts). */
    readonly partitioning: UserPartitioning,
    /** The engine thread's turns, which this tenant's long work shares with the other tenants' (slices.ts). */
    private readonly turns: FairTurns,
  ) {
    this.partitions = partitioning.partitions;
    this.locks = Array.from({ length: partitioning.partitions }, () => new Mutex());
    this.data = new TenantData(database, id);
    this.shardLoader = new ShardLoader(database, id);
  }

  /** A new piece of this tenant's long work, run in slices between the other tenants' (slices.ts). */
  slices(): Slices {
    return new Slices(this.turns, this.id);
  }

  /** Runs `work` while no partition loop of this tenant is inside a batch. */
  exclusive<T>(work: () => Promise<T>): Promise<T> {
    return withLocks(this.locks, work);
  }
}

/**
 * An instance's counts summed over its shards: every step of the workflow (0 when empty) and any other step holding
 * users (of an older version); `converted` and `convertedFrom` only when asked (the workflow has a goal); `exited` and
 * `exitedFrom` with exit criteria; with a holdout, its group's entries (and conversions when asked).
 */
export function countsOf(instanceId: string, workflow: WorkflowRuntime, shards: readonly (Shard | undefined)[], withConverted: boolean): Counts {
  const steps: Record<string, number> = {};
  const edges: Record<string, number> = {};
  for (const name of workflow.steps.keys()) steps[name] = 0;
  let total = 0;
  let entered = 0;
  let converted = 0;
  let heldEntered = 0;
  let heldConverted = 0;
  const convertedFrom: Record<string, number> = {};
  const exited = exitedCounts(workflow);
  for (const shard of shards) {
    if (!shard) continue;
    if (exited) exited.add(shard);
    entered += shard.entered;
    heldEntered += shard.holdoutEntered;
    if (workflow.holdout && withConverted) heldConverted += shard.holdoutConverted();
    for (const [name, bitmap] of shard.converted) {
      convertedFrom[name] = (convertedFrom[name] ?? 0) + bitmap.size;
      converted += bitmap.size;
    }
    for (const [name, bitmap] of shard.steps) {
      const size = bitmap.size;
      if (size === 0 && !(name in steps)) continue;
      steps[name] = (steps[name] ?? 0) + size;
      total += size;
    }
    for (const [key, count] of shard.edges) edges[key] = (edges[key] ?? 0) + count;
  }
  return {
    instanceId,
    total,
    entered,
    ...(withConverted ? { converted, convertedFrom } : {}),
    ...(exited ? exited.counts() : {}),
    ...(workflow.holdout ? { holdout: { entered: heldEntered, ...(withConverted ? { converted: heldConverted } : {}) } } : {}),
    ...(workflow.experiments.size > 0 && withConverted ? { experiments: experimentFigures(workflow, shards) } : {}),
    steps,
    edges,
  };
}

/** The counts of one shard (one partition of an instance), in the shape of an instance's counts. */
export function shardCounts(instance: InstanceRuntime, partition: number): Counts | null {
  const shard = instance.shards[partition];
  if (!shard) return null;
  const steps: Record<string, number> = {};
  const edges: Record<string, number> = {};
  for (const name of instance.workflow.steps.keys()) steps[name] = 0;
  let total = 0;
  for (const [name, bitmap] of shard.steps) {
    steps[name] = (steps[name] ?? 0) + bitmap.size;
    total += bitmap.size;
  }
  for (const [key, count] of shard.edges) edges[key] = count;
  const counts: Counts = { instanceId: instance.id, total, entered: shard.entered, steps, edges };
  if (instance.workflow.goal) {
    counts.convertedFrom = Object.fromEntries([...shard.converted].map(([step, users]) => [step, users.size]));
    counts.converted = Object.values(counts.convertedFrom).reduce((sum, n) => sum + n, 0);
  }
  const exited = exitedCounts(instance.workflow);
  if (exited) {
    exited.add(shard);
    Object.assign(counts, exited.counts());
  }
  if (instance.workflow.holdout) {
    counts.holdout = { entered: shard.holdoutEntered, ...(instance.workflow.goal ? { converted: shard.holdoutConverted() } : {}) };
  }
  if (instance.workflow.experiments.size > 0 && instance.workflow.goal) counts.experiments = experimentFigures(instance.workflow, [shard]);
  return counts;
}

/** With exit criteria, a sum of shards' exited users: per step of the workflow (0 when none) and in all. */
function exitedCounts(workflow: WorkflowRuntime): { add(shard: Shard): void; counts(): Required<Pick<Counts, 'exited' | 'exitedFrom'>> } | null {
  if (!workflow.exit) return null;
  const exitedFrom: Record<string, number> = Object.fromEntries([...workflow.steps.keys()].map((name) => [name, 0]));
  let exited = 0;
  return {
    add(shard) {
      for (const [name, bitmap] of shard.exited) {
        exitedFrom[name] = (exitedFrom[name] ?? 0) + bitmap.size;
        exited += bitmap.size;
      }
    },
    counts: () => ({ exited, exitedFrom }),
  };
}

/**
 * Per experiment split step of the workflow, per path in the step's order: the users who took it and those of them who
 * converted (converted users ∩ path users: one AND count per bitmap), summed over the shards.
 */
function experimentFigures(workflow: WorkflowRuntime, shards: readonly (Shard | undefined)[]): Record<string, ExperimentFigures> {
  const out: Record<string, ExperimentFigures> = {};
  for (const [name, step] of workflow.experiments) {
    const paths = step.paths.map((path) => ({ path: path.next, entered: 0, converted: 0 }));
    for (const shard of shards) {
      const byPath = shard?.paths.get(name);
      if (!byPath) continue;
      for (const figures of paths) {
        const users = byPath.get(figures.path);
        if (!users) continue;
        figures.entered += users.size;
        figures.converted += shard!.convertedOf(users);
      }
    }
    out[name] = { paths, winner: step.experiment?.winner?.path ?? null };
  }
  return out;
}
