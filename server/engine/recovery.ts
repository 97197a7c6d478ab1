// Rebuilding a shard: its last checkpoint plus the journal's moves after it, replayed in seq order. Replay only
// moves bits (and re-derives delay/ttl buckets from each move's time); it never runs steps again.
//
// Single-user moves are replayed as bitmaps: a run of consecutive rows in which no user appears twice is grouped by
// (from, to, delay/ttl bucket) and each group applied with one bitmap operation per step. Within such a run the
// order of different users' moves cannot change the result; a user's second move starts a new run.
//
// Shards of several partitions of one instance are rebuilt from ONE pass over the journal (ShardLoader batches the
// loads of the partitions a process takes at once, as at boot): the partitions' rows interleave by seq, so a read
// per partition would visit every page of the range once per partition. Unless the instance's rows are a minority
// of the journal after its checkpoints (an instance idle since then), or the database reads faster by the index
// (PostgreSQL; server/storage/journal/replay.ts `onePassPays` decides): then each partition reads its own.
//
// A timer plan written since the checkpoint (server/storage/journal/timer-plans.ts) sets the timer steps' next firings
// at its journal seq: after the moves committed before it, before those committed after it (a firing journaled later
// plans again).
import { RoaringBitmap32 } from '../crowd/bitmap';
import { EXITED } from './exit';
import { plannedAfter } from './local-time';
import type { WorkflowRuntime } from './runtime';
import { bucketEnd, bucketsOf, Shard } from './shard';
import { conversionsAfterCheckpoint } from '../storage/journal/conversions';
import type { CrowdChange } from './crowd-changes';
import { loadTimerPlans, type TimerPlan } from '../storage/journal/timer-plans';
import {
  BITMAP,
  COUNT,
  FROM_STEP,
  instanceJournalAfter,
  journalAfter,
  loadCheckpoints,
  onePassPays,
  PARTITION,
  SEQ,
  TIME_MS,
  TO_STEP,
  USER,
  unjournaledCheckpoints,
  type ReplayRow,
} from '../storage/journal/replay';
import type { Database } from '../storage/database';

export interface LoadedShard {
  shard: Shard;
  /** Journal rows replayed onto the checkpoint. */
  replayed: number;
  /** The last journal seq the shard includes (a later catch-up replays only the rows after it). */
  seq: number;
  /** The `unjournaled` count of the checkpoint it was rebuilt from (null: none), to notice a later such checkpoint. */
  unjournaled: number | null;
}

export async function loadShard(database: Database, tenantId: string, instanceId: string, partition: number, workflow: WorkflowRuntime): Promise<LoadedShard> {
  return (await loadShards(database, tenantId, instanceId, [partition], workflow)).get(partition)!;
}

/** Rebuilds the shards of the given partitions of one instance: their checkpoints, then one pass over the journal. */
export async function loadShards(
  database: Database,
  tenantId: string,
  instanceId: string,
  partitions: number[],
  workflow: WorkflowRuntime,
): Promise<Map<number, LoadedShard>> {
  const checkpoints = await loadCheckpoints(database, tenantId, instanceId, partitions);
  const plans = await loadTimerPlans(database, tenantId, instanceId, partitions);
  const targets = new Map<number, { loaded: LoadedShard; after: number; replay: Replay }>();
  for (const partition of partitions) {
    const checkpoint = checkpoints.get(partition);
    const shard = checkpoint ? Shard.decode(instanceId, partition, checkpoint.data) : new Shard(instanceId, partition);
    const after = checkpoint?.journalSeq ?? 0;
    const initial = { shard, replayed: 0, seq: after, unjournaled: checkpoint?.unjournaled ?? null };
    // A plan older than the checkpoint is one a checkpoint of code before timer plans left behind: the checkpoint has it.
    const plan = plans.get(partition);
    const newer = plan && plan.journalSeq >= after ? plan : undefined;
    targets.set(partition, { loaded: initial, after, replay: new Replay(shard, workflow, newer) });
  }
  await journalPass(database, tenantId, instanceId, targets, Number.POSITIVE_INFINITY, (target, row) => {
    target.loaded.replayed++;
    target.loaded.seq = row[SEQ];
  });
  const loaded = new Map<number, LoadedShard>();
  for (const [partition, target] of targets) {
    target.replay.finish();
    // Conversions are not journaled: the rows committed since the checkpoint are ORed onto it.
    for (const [step, users] of await conversionsByStep(database, tenantId, instanceId, partition)) target.loaded.shard.convert(step, users);
    loaded.set(partition, target.loaded);
  }
  return loaded;
}

/**
 * Brings a shard rebuilt at journal seq `loaded.seq` up to what is committed now: the journal rows after it, then the
 * conversions since the partition's checkpoint (ORed: those already in the shard change nothing). False, changing
 * nothing, when a checkpoint written since holds changes of step members no journal row carries (a crowd update's
 * joiners and leavers): only a rebuild from it is current.
 */
export async function catchUpShard(database: Database, tenantId: string, loaded: LoadedShard, workflow: WorkflowRuntime): Promise<boolean> {
  const { shard } = loaded;
  if ((await unjournaledCheckpoints(database, tenantId, shard.instanceId, shard.partition)) !== loaded.unjournaled) return false;
  const replay = new Replay(shard, workflow);
  await journalAfter(database, tenantId, shard.instanceId, shard.partition, loaded.seq, (row) => {
    replay.add(row);
    loaded.replayed++;
    loaded.seq = row[SEQ];
  });
  replay.flush();
  for (const [step, users] of await conversionsByStep(database, tenantId, shard.instanceId, shard.partition)) shard.convert(step, users);
  return true;
}

/**
 * Shards of one instance as they were at `untilMs` (point-in-time reads, ./as-of.ts): each base shard as it was at its
 * journal seq `after` (a checkpoint's, or an empty shard at 0) plus its partition's journal rows after it moved at or
 * before `untilMs`, replayed as recovery replays them, in one pass where recovery makes one, and the crowd updates'
 * `changes` to cross, each where it comes among the rows. Conversions and timer plans are not journaled and are left
 * as they are.
 */
export async function replayUntil(
  database: Database,
  tenantId: string,
  instanceId: string,
  bases: Map<number, { shard: Shard; after: number; changes?: CrowdChange[] }>,
  untilMs: number,
  workflow: WorkflowRuntime,
): Promise<void> {
  const targets = new Map(
    [...bases].map(([partition, { shard, after, changes }]) => [partition, { after, replay: new Replay(shard, workflow, undefined, changes) }]),
  );
  await journalPass(database, tenantId, instanceId, targets, untilMs);
  for (const target of targets.values()) target.replay.finish();
}

/**
 * Replays the journal rows of the given partitions after each one's `after` (moved by `untilMs`) onto its Replay, in
 * seq order: ONE pass over the instance's journal when that is the cheaper read (see the top of this file), else a read
 * per partition. `replayed` is told of each row after it is added.
 */
async function journalPass<T extends { after: number; replay: Replay }>(
  database: Database,
  tenantId: string,
  instanceId: string,
  targets: Map<number, T>,
  untilMs: number,
  replayed?: (target: T, row: ReplayRow) => void,
): Promise<void> {
  const visit = (row: ReplayRow) => {
    const target = targets.get(row[PARTITION]);
    if (!target || row[SEQ] <= target.after) return;
    target.replay.add(row);
    replayed?.(target, row);
  };
  const from = Math.min(...[...targets.values()].map((target) => target.after));
  if (targets.size > 1 && (await onePassPays(database, tenantId, instanceId, from)))
    await instanceJournalAfter(database, tenantId, instanceId, from, visit, untilMs);
  else for (const [partition, target] of targets) await journalAfter(database, tenantId, instanceId, partition, target.after, visit, untilMs);
}

interface ShardRequest {
  instanceId: string;
  workflow: WorkflowRuntime;
  partition: number;
  resolve(shard: Shard): void;
  reject(error: unknown): void;
}

/**
 * Batches the shard loads of one tenant: while leases are being read (`taking`), loads wait, so the partitions taken
 * together (each asks for its shards right after its lease, without waiting for anything else) share one journal pass
 * per instance. A take never holds the batch while it waits for a lock, so nothing waits in a circle.
 */
export class ShardLoader {
  private queue: ShardRequest[] = [];
  private readingLeases = 0;
  private scheduled = false;

  constructor(
    private readonly database: Database,
    private readonly tenantId: string,
  ) {}

  /** A lease is being read; call the returned function once it is read (taken or not). */
  taking(): () => void {
    this.readingLeases++;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.readingLeases--;
      this.schedule();
    };
  }

  load(instanceId: string, partition: number, workflow: WorkflowRuntime): Promise<Shard> {
    return new Promise((resolve, reject) => {
      this.queue.push({ instanceId, workflow, partition, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.readingLeases > 0 || this.queue.length === 0) return;
    this.scheduled = true;
    // One turn later: a take whose lease was just read asks for its shards within this turn.
    setImmediate(() => {
      this.scheduled = false;
      if (this.readingLeases > 0) return;
      const batch = this.queue;
      this.queue = [];
      void this.run(batch);
    });
  }

  private async run(batch: ShardRequest[]): Promise<void> {
    // One pass per instance and workflow version (a load asked for before an update of the workflow keeps its own).
    const groups = new Map<WorkflowRuntime, Map<string, ShardRequest[]>>();
    for (const request of batch) {
      const byInstance = groups.get(request.workflow) ?? new Map<string, ShardRequest[]>();
      groups.set(request.workflow, byInstance.set(request.instanceId, [...(byInstance.get(request.instanceId) ?? []), request]));
    }
    for (const [workflow, byInstance] of groups) {
      for (const [instanceId, requests] of byInstance) {
        try {
          const loaded = await loadShards(this.database, this.tenantId, instanceId, [...new Set(requests.map((r) => r.partition))], workflow);
          // Two requests for one partition (a re-take racing a load) must not share one shard object.
          const handed = new Set<number>();
          for (const { partition, resolve } of requests) {
            const { shard } = loaded.get(partition)!;
            resolve(handed.has(partition) ? Shard.decode(instanceId, partition, shard.encode()) : shard);
            handed.add(partition);
          }
        } catch (error) {
          for (const request of requests) request.reject(error);
        }
      }
    }
  }
}

interface MoveGroup {
  from: string | null;
  to: string;
  timeMs: number;
  users: number[];
  count: number;
}

class Replay {
  /** Users moved in the current run: a user seen again ends the run. */
  private readonly runUsers = new Set<number>();
  private readonly groups = new Map<string, MoveGroup>();
  /** The group of the previous row: consecutive rows mostly share from, to and time, so the key is built rarely. */
  private last: MoveGroup | null = null;

  /** Crowd updates' changes still to apply, oldest first (point-in-time reads only). */
  private readonly changes: CrowdChange[];

  constructor(
    private readonly shard: Shard,
    private readonly workflow: WorkflowRuntime,
    private timerPlan?: TimerPlan,
    changes: CrowdChange[] = [],
  ) {
    this.changes = [...changes];
  }

  add(row: ReplayRow): void {
    if (this.timerPlan && row[SEQ] > this.timerPlan.journalSeq) this.applyTimerPlan();
    while (this.changes.length > 0 && this.changes[0].journalSeq < row[SEQ]) this.applyChange(this.changes.shift()!);
    const fromStep = row[FROM_STEP];
    const toStep = row[TO_STEP];
    const timeMs = row[TIME_MS];
    const bitmap = row[BITMAP];
    if (bitmap) {
      this.flush();
      applyMove(this.shard, this.workflow, fromStep, toStep, timeMs, RoaringBitmap32.deserialize(bitmap, 'portable'), row[COUNT]);
      return;
    }
    const user = row[USER]!;
    if (this.runUsers.has(user)) this.flush();
    this.runUsers.add(user);
    let group = this.last;
    if (group === null || group.from !== fromStep || group.to !== toStep || group.timeMs !== timeMs) {
      const key = this.groupKey(fromStep, toStep, timeMs);
      group = this.groups.get(key) ?? null;
      if (!group) this.groups.set(key, (group = { from: fromStep, to: toStep, timeMs, users: [], count: 0 }));
      this.last = group;
    }
    group.users.push(user);
    group.count += row[COUNT];
  }

  /** Applies what is pending: grouped moves, then a timer plan and crowd changes none of the rows read came after. */
  finish(): void {
    if (this.timerPlan) this.applyTimerPlan();
    else this.flush();
    for (const change of this.changes.splice(0)) this.applyChange(change);
  }

  /** A crowd update's change: its leavers out of their steps, then its joiners' moves. */
  private applyChange(change: CrowdChange): void {
    this.flush();
    const shard = this.shard;
    for (const [step, users] of change.left) {
      shard.step(step).andNotInPlace(users);
      for (const buckets of [shard.delays.get(step), shard.ttls.get(step)]) for (const bitmap of buckets?.values() ?? []) bitmap.andNotInPlace(users);
    }
    for (const move of change.moves) applyMove(shard, this.workflow, move.from, move.to, change.timeMs, move.users, move.count);
  }

  flush(): void {
    for (const g of this.groups.values()) applyMove(this.shard, this.workflow, g.from, g.to, g.timeMs, RoaringBitmap32.from(g.users), g.count);
    this.groups.clear();
    this.last = null;
    this.runUsers.clear();
  }

  private applyTimerPlan(): void {
    this.flush();
    for (const [step, at] of Object.entries(this.timerPlan!.cronNext)) this.shard.cronNext.set(step, at);
    this.timerPlan = undefined;
  }

  /** Rows in one group land in the same delay and ttl buckets of their target step. */
  private groupKey(fromStep: string | null, toStep: string, timeMs: number): string {
    const target = this.workflow.steps.get(toStep);
    const delay = target?.delayMs ? bucketEnd(timeMs, target.delayBucketMs) : '';
    const ttl = target?.ttlMs ? bucketEnd(timeMs, target.ttlBucketMs) : '';
    return `${fromStep ?? ''}\u0000${fromStep === null ? 0 : 1}\u0000${toStep}\u0000${delay}\u0000${ttl}`;
  }
}

function applyMove(shard: Shard, workflow: WorkflowRuntime, from: string | null, to: string, timeMs: number, users: RoaringBitmap32, count: number): void {
  if (to === EXITED) {
    replayExit(shard, workflow, from, users, count);
    return;
  }
  // Users leave a timer step (except by exit criteria) only when it fires, and a firing that moved users commits no
  // checkpoint: its next firing is planned from the move's time, exactly as the live tick planned it (a local-time timer's provisionally).
  const source = from === null ? undefined : workflow.steps.get(from)?.step;
  if (source?.kind === 'timer') shard.cronNext.set(source.name, plannedAfter(source, timeMs));
  if (from !== null) leave(shard, from, users);
  shard.step(to).orInPlace(users);
  const runtime = workflow.steps.get(to);
  if (runtime?.delayMs) bucket(shard.delays, to, bucketEnd(timeMs, runtime.delayBucketMs)).orInPlace(users);
  if (runtime?.ttlMs) bucket(shard.ttls, to, bucketEnd(timeMs, runtime.ttlBucketMs)).orInPlace(users);
  shard.countEdge(from, to, count);
  if (workflow.isEntry(from, to)) shard.countEntry(users, count, workflow.holdout);
  if (workflow.isExperimentPath(from, to)) shard.tookPath(from, to, users);
}

/** Users who met the exit criteria (exit.ts) left `from`; from nowhere (as they entered) they count as entered, at the entry step. */
function replayExit(shard: Shard, workflow: WorkflowRuntime, from: string | null, users: RoaringBitmap32, count: number): void {
  if (from !== null) leave(shard, from, users);
  shard.exit(from ?? workflow.entry, users);
  if (from === null) shard.countEntry(users, count, workflow.holdout);
}

function leave(shard: Shard, from: string, users: RoaringBitmap32): void {
  shard.step(from).andNotInPlace(users);
  for (const buckets of [shard.delays.get(from), shard.ttls.get(from)]) for (const bitmap of buckets?.values() ?? []) bitmap.andNotInPlace(users);
}

function bucket(map: Map<string, Map<number, RoaringBitmap32>>, step: string, end: number): RoaringBitmap32 {
  const buckets = bucketsOf(map, step);
  let bitmap = buckets.get(end);
  if (!bitmap) buckets.set(end, (bitmap = new RoaringBitmap32()));
  return bitmap;
}

/**
 * The conversions committed since the shard's checkpoint, by step. A user converts once per instance, so ORing every
 * remaining row onto the checkpoint gives the shard's conversions whatever the rows' order.
 */
async function conversionsByStep(database: Database, tenantId: string, instanceId: string, partition: number): Promise<Map<string, RoaringBitmap32>> {
  const byStep = new Map<string, RoaringBitmap32>();
  for (const row of await conversionsAfterCheckpoint(database, tenantId, instanceId, partition)) {
    const users = RoaringBitmap32.deserialize(row.bitmap, 'portable');
    const known = byStep.get(row.step);
    if (known) known.orInPlace(users);
    else byStep.set(row.step, users);
  }
  return byStep;
}
