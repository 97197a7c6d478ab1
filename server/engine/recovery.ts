// Rebuilding a shard: its last checkpoint plus the journal's moves after it, replayed in seq order. Replay only
// moves bits (and re-derives delay/ttl buckets from each move's time); it never runs steps again.
//
// Single-user moves are replayed as bitmaps: a run of consecutive rows in which no user appears twice is grouped by
// (from, to, delay/ttl bucket) and each group applied with one bitmap operation per step. Within such a run the
// order of different users' moves cannot change the result; a user's second move starts a new run.
import { RoaringBitmap32 } from '../crowd/bitmap';
import { nextCronTime } from '../model/cron';
import type { WorkflowRuntime } from './runtime';
import { bucketEnd, bucketsOf, Shard } from './shard';
import { journalAfter, loadCheckpoint, type ReplayRow } from './store/replay';

export async function loadShard(instanceId: string, partition: number, workflow: WorkflowRuntime): Promise<{ shard: Shard; replayed: number }> {
  const checkpoint = await loadCheckpoint(instanceId, partition);
  const shard = checkpoint ? Shard.decode(instanceId, partition, checkpoint.data) : new Shard(instanceId, partition);
  const replay = new Replay(shard, workflow);
  let replayed = 0;
  for await (const page of journalAfter(instanceId, partition, checkpoint?.journalSeq ?? 0)) {
    for (const row of page) replay.add(row);
    replayed += page.length;
  }
  replay.flush();
  return { shard, replayed };
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

  constructor(
    private readonly shard: Shard,
    private readonly workflow: WorkflowRuntime,
  ) {}

  add(row: ReplayRow): void {
    if (row.bitmap) {
      this.flush();
      applyMove(this.shard, this.workflow, row.fromStep, row.toStep, row.timeMs, RoaringBitmap32.deserialize(row.bitmap, 'portable'), row.count);
      return;
    }
    const user = row.user!;
    if (this.runUsers.has(user)) this.flush();
    this.runUsers.add(user);
    let group = this.last;
    if (group === null || group.from !== row.fromStep || group.to !== row.toStep || group.timeMs !== row.timeMs) {
      const key = this.groupKey(row);
      group = this.groups.get(key) ?? null;
      if (!group) this.groups.set(key, (group = { from: row.fromStep, to: row.toStep, timeMs: row.timeMs, users: [], count: 0 }));
      this.last = group;
    }
    group.users.push(user);
    group.count += row.count;
  }

  flush(): void {
    for (const g of this.groups.values()) applyMove(this.shard, this.workflow, g.from, g.to, g.timeMs, RoaringBitmap32.from(g.users), g.count);
    this.groups.clear();
    this.last = null;
    this.runUsers.clear();
  }

  /** Rows in one group land in the same delay and ttl buckets of their target step. */
  private groupKey(row: ReplayRow): string {
    const target = this.workflow.steps.get(row.toStep);
    const delay = target?.delayMs ? bucketEnd(row.timeMs, target.delayBucketMs) : '';
    const ttl = target?.ttlMs ? bucketEnd(row.timeMs, target.ttlBucketMs) : '';
    return `${row.fromStep ?? ''}\u0000${row.fromStep === null ? 0 : 1}\u0000${row.toStep}\u0000${delay}\u0000${ttl}`;
  }
}

function applyMove(shard: Shard, workflow: WorkflowRuntime, from: string | null, to: string, timeMs: number, users: RoaringBitmap32, count: number): void {
  // Users leave a timer step only when it fires, and a firing that moved users commits no checkpoint: its next
  // firing is planned from the move's time, exactly as the live tick planned it.
  const source = from === null ? undefined : workflow.steps.get(from)?.step;
  if (source?.kind === 'timer') shard.cronNext.set(source.name, nextCronTime(source.cron, timeMs, source.tz));
  if (from !== null) {
    shard.step(from).andNotInPlace(users);
    for (const buckets of [shard.delays.get(from), shard.ttls.get(from)]) for (const bitmap of buckets?.values() ?? []) bitmap.andNotInPlace(users);
  }
  shard.step(to).orInPlace(users);
  const runtime = workflow.steps.get(to);
  if (runtime?.delayMs) bucket(shard.delays, to, bucketEnd(timeMs, runtime.delayBucketMs)).orInPlace(users);
  if (runtime?.ttlMs) bucket(shard.ttls, to, bucketEnd(timeMs, runtime.ttlBucketMs)).orInPlace(users);
  shard.countEdge(from, to, count);
}

function bucket(map: Map<string, Map<number, RoaringBitmap32>>, step: string, end: number): RoaringBitmap32 {
  const buckets = bucketsOf(map, step);
  let bitmap = buckets.get(end);
  if (!bitmap) buckets.set(end, (bitmap = new RoaringBitmap32()));
  return bitmap;
}
