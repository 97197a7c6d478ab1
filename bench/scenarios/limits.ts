// The limit: the same work done by bare roaring calls and byte loops, with no engine, storage or HTTP around it.
// Each function returns the wall time (ms) or rate of that bare work; Crowdflow's figures are compared with these.
import { radixSortUint32, RoaringBitmap32 } from '../../server/crowd/bitmap';
import { partitionOf, USER_BLOCK } from '../../server/engine/partitioning';
import { journeyEvents, type BenchEvent } from '../lib/data';

/** A new tenant's layout (blocks of USER_BLOCK ids dealt round-robin), which the engine's figures are measured on. */
const layout = (partitions: number) => ({ partitions, userBlock: USER_BLOCK });

/** Byte scan of newline-separated decimal IDs into a Uint32Array, radix-sorted and added to roaring in one call. */
export function bareParseText(text: Uint8Array): RoaringBitmap32 {
  const ids = new Uint32Array(Math.ceil(text.length / 2));
  let count = 0;
  let value = 0;
  let inNumber = false;
  for (let i = 0; i < text.length; i++) {
    const byte = text[i];
    if (byte >= 48 && byte <= 57) {
      value = value * 10 + (byte - 48);
      inNumber = true;
    } else if (inNumber) {
      ids[count++] = value;
      value = 0;
      inNumber = false;
    }
  }
  if (inNumber) ids[count++] = value;
  const found = ids.subarray(0, count);
  return RoaringBitmap32.from(radixSortUint32(found, new Uint32Array(count)));
}

/** Splits a crowd into `partitions` shard bitmaps (by block of ids) and serializes each, the least a start must do. */
export function bareStart(crowd: RoaringBitmap32, partitions: number): Buffer[] {
  const ids = crowd.toUint32Array();
  const of = layout(partitions);
  const sizes = new Uint32Array(partitions);
  for (let k = 0; k < ids.length; k++) sizes[partitionOf(ids[k], of)]++;
  const parts = Array.from(sizes, (size) => new Uint32Array(size));
  sizes.fill(0);
  for (let k = 0; k < ids.length; k++) {
    const p = partitionOf(ids[k], of);
    parts[p][sizes[p]++] = ids[k];
  }
  return parts.map((part) => {
    const bitmap = RoaringBitmap32.from(part);
    bitmap.runOptimize();
    return Buffer.from(bitmap.serialize('portable'));
  });
}

export interface BareShard {
  wait: RoaringBitmap32;
  big: RoaringBitmap32;
  small: RoaringBitmap32;
}

export function bareShards(crowd: RoaringBitmap32, partitions: number): BareShard[] {
  return bareStart(crowd, partitions).map((bytes) => ({
    wait: RoaringBitmap32.deserialize(bytes, 'portable'),
    big: new RoaringBitmap32(),
    small: new RoaringBitmap32(),
  }));
}

/** The branch step per event: find the user's shard, test membership, evaluate the condition, move. Events/s. */
export function bareApplyRate(shards: BareShard[], events: BenchEvent[]): number {
  const of = layout(shards.length);
  const start = performance.now();
  for (const event of events) {
    const shard = shards[partitionOf(event.user, of)];
    if (!shard.wait.has(event.user)) continue;
    if (event.type !== 'purchase') continue;
    shard.wait.remove(event.user);
    (event.data.amount > 100 ? shard.big : shard.small).add(event.user);
  }
  return events.length / ((performance.now() - start) / 1000);
}

/** The same, starting from the JSON text of batches of 1,000 events (what HTTP delivers). Events/s. */
export function bareApplyFromJsonRate(shards: BareShard[], batches: string[], eventCount: number): number {
  const of = layout(shards.length);
  const start = performance.now();
  for (const text of batches) {
    const { events } = JSON.parse(text) as { events: BenchEvent[] };
    for (const event of events) {
      const shard = shards[partitionOf(event.user, of)];
      if (!shard.wait.has(event.user) || event.type !== 'purchase') continue;
      shard.wait.remove(event.user);
      (event.data.amount > 100 ? shard.big : shard.small).add(event.user);
    }
  }
  return eventCount / ((performance.now() - start) / 1000);
}

/** A timer step: every shard's step bitmap moves to the next step, and the moved users are serialized for the journal. */
export function bareTimerMove(crowd: RoaringBitmap32, partitions: number): number {
  const shards = bareShards(crowd, partitions);
  const start = performance.now();
  for (const shard of shards) {
    shard.big.orInPlace(shard.wait);
    shard.wait.runOptimize();
    shard.wait.serialize('portable');
    shard.wait.clear();
  }
  return performance.now() - start;
}

/** Per-step counts: the size of every step bitmap of every shard, summed. p99 in ms over `times` reads. */
export function bareCountsP99(shards: BareShard[], times: number): number {
  const samples: number[] = [];
  for (let i = 0; i < times; i++) {
    const start = performance.now();
    const counts = { wait: 0, big: 0, small: 0 };
    for (const shard of shards) {
      counts.wait += shard.wait.size;
      counts.big += shard.big.size;
      counts.small += shard.small.size;
    }
    samples.push(performance.now() - start);
  }
  samples.sort((a, b) => a - b);
  return samples[Math.ceil(0.99 * samples.length) - 1];
}

/** A step export as CSV: union of the shards, then every ID written as decimal bytes into one buffer. */
export function bareExportCsv(shards: RoaringBitmap32[]): number {
  const step = RoaringBitmap32.orMany(shards);
  const ids = step.toUint32Array();
  const out = Buffer.allocUnsafe(ids.length * 11);
  let position = 0;
  for (let k = 0; k < ids.length; k++) {
    let value = ids[k];
    let digits = 1;
    for (let bound = 10; value >= bound && digits < 10; bound *= 10) digits++;
    position += digits;
    let cursor = position;
    do {
      const next = Math.floor(value / 10);
      out[--cursor] = 48 + value - next * 10;
      value = next;
    } while (value > 0);
    out[position++] = 10;
  }
  return position;
}

/** A step export as portable roaring: union of the shards, serialized. */
export function bareExportRoaring(shards: RoaringBitmap32[]): number {
  return RoaringBitmap32.orMany(shards).serialize('portable').byteLength;
}

/**
 * Recovery: deserialize each shard's checkpoint, then apply journal moves (`from` → `to` of single users),
 * batched per shard with removeMany/addMany. Returns ms.
 */
export function bareRecovery(checkpoints: Buffer[], movedUsers: Uint32Array, partitions: number): number {
  const start = performance.now();
  const shards = checkpoints.map((bytes) => ({ wait: RoaringBitmap32.deserialize(bytes, 'portable'), small: new RoaringBitmap32() }));
  const perShard = Array.from({ length: partitions }, () => [] as number[]);
  const of = layout(partitions);
  for (let k = 0; k < movedUsers.length; k++) perShard[partitionOf(movedUsers[k], of)].push(movedUsers[k]);
  perShard.forEach((users, p) => {
    shards[p].wait.removeMany(users);
    shards[p].small.addMany(users);
  });
  return performance.now() - start;
}

/** Bytes per user of the shard bitmaps themselves (what a running instance cannot go below). */
export function bareBytesPerUser(crowd: RoaringBitmap32, partitions: number): number {
  const shards = bareShards(crowd, partitions);
  const bytes = shards.reduce((sum, s) => sum + s.wait.getSerializationSizeInBytes('portable'), 0);
  return bytes / crowd.size;
}

export interface LimitFigures {
  startMs: number;
  applyEventsPerSecond: number;
  applyFromJsonEventsPerSecond: number;
  timerMs: number;
  countsP99Ms: number;
  exportCsvMs: number;
  exportRoaringMs: number;
  recoveryMs: number;
  bytesPerUser: number;
}

function timed(work: () => unknown): number {
  const start = performance.now();
  work();
  return performance.now() - start;
}

/** Best of `times` runs: the limit is what the bare work can do, so noise is taken out, not averaged in. */
function best(times: number, work: () => number): number {
  let result = Infinity;
  for (let i = 0; i < times; i++) result = Math.min(result, work());
  return result;
}

export function measureLimits(crowd: RoaringBitmap32, scale: { events: number; recoveryMoves: number; partitions: number; countReads: number }): LimitFigures {
  const { partitions } = scale;
  const startMs = best(3, () => timed(() => bareStart(crowd, partitions)));
  const events = journeyEvents(scale.events, crowd.size - 1_000);
  const applyEventsPerSecond = Math.max(bareApplyRate(bareShards(crowd, partitions), events), bareApplyRate(bareShards(crowd, partitions), events));
  const batches: string[] = [];
  for (let offset = 0; offset < events.length; offset += 1_000) batches.push(JSON.stringify({ tenant: 'bench', events: events.slice(offset, offset + 1_000) }));
  const applyFromJsonEventsPerSecond = bareApplyFromJsonRate(bareShards(crowd, partitions), batches, events.length);
  const timerMs = best(3, () => bareTimerMove(crowd, partitions));
  const shards = bareShards(crowd, partitions);
  const countsP99Ms = bareCountsP99(shards, scale.countReads);
  const waitBitmaps = shards.map((s) => s.wait);
  const exportCsvMs = best(3, () => timed(() => bareExportCsv(waitBitmaps)));
  const exportRoaringMs = best(5, () => timed(() => bareExportRoaring(waitBitmaps)));
  const checkpoints = waitBitmaps.map((b) => Buffer.from(b.serialize('portable')));
  const movedCount = Math.min(scale.recoveryMoves, crowd.size);
  const moved = crowd.rangeUint32Array(new Uint32Array(movedCount), 0, movedCount);
  const recoveryMs = best(3, () => bareRecovery(checkpoints, moved, partitions));
  return {
    startMs,
    applyEventsPerSecond,
    applyFromJsonEventsPerSecond,
    timerMs,
    countsP99Ms,
    exportCsvMs,
    exportRoaringMs,
    recoveryMs,
    bytesPerUser: bareBytesPerUser(crowd, partitions),
  };
}
