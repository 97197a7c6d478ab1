// Rebuilding a shard: its last checkpoint plus the journal's moves after it, replayed in seq order. Replay only
// moves bits (and re-derives delay/ttl buckets from each move's time); it never runs steps again.
import { RoaringBitmap32 } from '../crowd/bitmap';
import type { WorkflowRuntime } from './runtime';
import { bucketEnd, bucketsOf, Shard } from './shard';
import { journalAfter, loadCheckpoint, type StoredJournalRow } from './store';

export async function loadShard(instanceId: string, partition: number, workflow: WorkflowRuntime): Promise<{ shard: Shard; replayed: number }> {
  const checkpoint = await loadCheckpoint(instanceId, partition);
  const shard = checkpoint ? Shard.decode(instanceId, partition, checkpoint.data) : new Shard(instanceId, partition);
  let replayed = 0;
  for await (const page of journalAfter(instanceId, partition, checkpoint?.journalSeq ?? 0)) {
    for (const row of page) replayMove(shard, workflow, row);
    replayed += page.length;
  }
  return { shard, replayed };
}

export function replayMove(shard: Shard, workflow: WorkflowRuntime, row: StoredJournalRow): void {
  const users = row.bitmap ? RoaringBitmap32.deserialize(row.bitmap, 'portable') : null;
  const single = row.user;
  if (row.fromStep !== null) {
    const from = row.fromStep;
    const maps = [shard.step(from), ...[shard.delays.get(from), shard.ttls.get(from)].flatMap((b) => (b ? [...b.values()] : []))];
    for (const bitmap of maps) {
      if (users) bitmap.andNotInPlace(users);
      else bitmap.remove(single!);
    }
  }
  const add = (bitmap: RoaringBitmap32) => (users ? bitmap.orInPlace(users) : bitmap.add(single!));
  add(shard.step(row.toStep));
  const runtime = workflow.steps.get(row.toStep);
  if (runtime?.delayMs) add(bucket(shard.delays, row.toStep, bucketEnd(row.timeMs, runtime.delayBucketMs)));
  if (runtime?.ttlMs) add(bucket(shard.ttls, row.toStep, bucketEnd(row.timeMs, runtime.ttlBucketMs)));
  shard.countEdge(row.fromStep, row.toStep, row.count);
}

function bucket(map: Map<string, Map<number, RoaringBitmap32>>, step: string, end: number): RoaringBitmap32 {
  const buckets = bucketsOf(map, step);
  let bitmap = buckets.get(end);
  if (!bitmap) buckets.set(end, (bitmap = new RoaringBitmap32()));
  return bitmap;
}
