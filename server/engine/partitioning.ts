// Which partition holds a user. A tenant's users are dealt to its partitions in blocks of `userBlock` consecutive ids,
// round-robin: block b = floor(user / userBlock) goes to partition b % partitions. Tenants made before blocks
// existed keep `userBlock` 1 (user % partitions), as their logs, journals and checkpoints were written so.
//
// Why blocks (issue 39 §2): with user % 8 a partition's share of a dense crowd is every eighth id, which roaring can
// only store as bitmap containers: a 10M-user move was 10 MB of journal bitmaps, 1,000 tenants' minute firing wrote
// 8,000 rows of 2.5 KB, and those bytes decided PostgreSQL's timer figures. With blocks of 256 ids a partition's share
// is 32 runs per 65,536 ids: the same 10M-user move is 170 KB once run-compressed (`compactBytes`), a 10,000-user
// tenant's partition share a few runs, and shard operations on runs are faster than on bitmap containers. Blocks of
// 256 still spread a 10,000-user crowd over every one of 8 partitions (5 blocks each).
import { RoaringBitmap32 } from '../crowd/bitmap';

/** How a tenant's users map to its partitions (the Tenant row's `partitions` and `userBlock`). */
export type UserPartitioning = { readonly partitions: number; readonly userBlock: number };

/** The block of new tenants: a power of two dividing 65,536, so no block straddles two roaring containers. */
export const USER_BLOCK = 256;

/** The partition holding `user`. */
export function partitionOf(user: number, { partitions, userBlock }: UserPartitioning): number {
  return Math.floor(user / userBlock) % partitions;
}

/**
 * A dense crowd is split with masks when its id span is at most this many times its size: a mask is built in C
 * (`fromRange` with a step) or from its runs, while the per-id split costs a JS pass over every id.
 */
const MASK_SPAN_PER_USER = 4;

/**
 * Users by partition, one partition at a time (so an operation can yield between them). A dense crowd: one AND per
 * partition with the mask of that partition's ids over the crowd's span (10M users: 8 ANDs instead of materialising
 * 40 MB of ids). A sparse one: two tight passes over the ids at the first call, then one bitmap per partition from
 * sorted ids. Each part is run-compressed, so the shards built from it stay runs. Ask for each partition once: its
 * part is a new bitmap the caller owns (and frees once done with it, see Arrivals in moves.ts), except with one
 * partition, where it is `users` itself.
 */
export function splitByPartition(users: RoaringBitmap32, partitioning: UserPartitioning): (partition: number) => RoaringBitmap32 {
  if (partitioning.partitions === 1) return () => users;
  if (users.size === 0) return () => new RoaringBitmap32();
  const first = users.minimum();
  const end = users.maximum() + 1;
  if (end - first <= MASK_SPAN_PER_USER * users.size) {
    return (partition) => {
      const mask = partitionMask(first, end, partition, partitioning);
      const part = RoaringBitmap32.and(users, mask);
      mask.dispose();
      part.runOptimize();
      return part;
    };
  }
  let parts: RoaringBitmap32[] | undefined;
  return (partition) => (parts ??= sparseByPartition(users, partitioning))[partition];
}

/** Users by partition (splitByPartition), all at once. */
export function byPartition(users: RoaringBitmap32, partitioning: UserPartitioning): RoaringBitmap32[] {
  const split = splitByPartition(users, partitioning);
  return Array.from({ length: partitioning.partitions }, (_, partition) => split(partition));
}

function sparseByPartition(users: RoaringBitmap32, partitioning: UserPartitioning): RoaringBitmap32[] {
  const ids = users.toUint32Array();
  const of = new Uint16Array(ids.length);
  const counts = new Uint32Array(partitioning.partitions);
  for (let i = 0; i < ids.length; i++) counts[(of[i] = partitionOf(ids[i], partitioning))]++;
  const parts = Array.from(counts, (n) => new Uint32Array(n));
  const fill = new Uint32Array(partitioning.partitions);
  for (let i = 0; i < ids.length; i++) parts[of[i]][fill[of[i]]++] = ids[i];
  return parts.map((part) => {
    const bitmap = RoaringBitmap32.from(part);
    bitmap.runOptimize();
    return bitmap;
  });
}

/** The ids of `partition` in [first, end). As large as the part it cuts (one run per block), and used once. */
export function partitionMask(first: number, end: number, partition: number, { partitions, userBlock }: UserPartitioning): RoaringBitmap32 {
  if (userBlock === 1) {
    const start = first + ((partition - (first % partitions) + partitions) % partitions);
    return start >= end ? new RoaringBitmap32() : RoaringBitmap32.fromRange(start, end, partitions);
  }
  return blockMask(first, end, partition, partitions, userBlock);
}

/**
 * The blocks of `partition` within [first, end), written as portable roaring run containers and read back: adding
 * them one `addRange` at a time cost ~0.2 µs a block, 100 ms for a 2^27-user crowd, and building them in arrays
 * first 37 ms for its 8 masks (and 1.4 MB of garbage a mask). No block straddles a container: `userBlock` divides
 * 65,536, and only the first run may start inside a block (at `first`).
 */
function blockMask(first: number, end: number, partition: number, partitions: number, userBlock: number): RoaringBitmap32 {
  const firstBlock = Math.floor(first / userBlock);
  const from = (firstBlock + ((partition - (firstBlock % partitions) + partitions) % partitions)) * userBlock;
  if (from >= end) return new RoaringBitmap32();
  const step = partitions * userBlock;
  const runs = Math.ceil((end - from) / step);
  const runStart = (r: number) => Math.max(from + r * step, first);
  const runEnd = (r: number) => Math.min(from + r * step + userBlock, end);
  // Containers (one per distinct high 16 bits): their keys, how many runs and ids each holds.
  const most = Math.min(runs, Math.floor((end - 1) / 65_536) - Math.floor(from / 65_536) + 1);
  const keys = new Uint32Array(most);
  const runsOf = new Uint32Array(most);
  const cardinalities = new Uint32Array(most);
  let n = 0;
  for (let r = 0; r < runs; r++) {
    const start = runStart(r);
    const key = Math.floor(start / 65_536);
    if (n === 0 || keys[n - 1] !== key) keys[n++] = key;
    runsOf[n - 1]++;
    cardinalities[n - 1] += runEnd(r) - start;
  }
  // RoaringFormatSpec, every container a run container.
  const flagsBytes = Math.ceil(n / 8);
  const withOffsets = n >= 4; // NO_OFFSET_THRESHOLD: a run-cookie file of fewer containers has no offset header
  const headerAt = 4 + flagsBytes;
  let at = headerAt + 4 * n + (withOffsets ? 4 * n : 0);
  const out = new Uint8Array(at + 2 * n + 4 * runs);
  const view = new DataView(out.buffer);
  view.setUint32(0, (((n - 1) << 16) | 12347) >>> 0, true);
  out.fill(0xff, 4, 4 + (n >>> 3));
  if (n & 7) out[4 + (n >>> 3)] = (1 << (n & 7)) - 1;
  for (let c = 0, r = 0; c < n; c++) {
    view.setUint16(headerAt + 4 * c, keys[c], true);
    view.setUint16(headerAt + 4 * c + 2, cardinalities[c] - 1, true);
    if (withOffsets) view.setUint32(headerAt + 4 * n + 4 * c, at, true);
    view.setUint16(at, runsOf[c], true);
    at += 2;
    for (const last = r + runsOf[c]; r < last; r++, at += 4) {
      const start = runStart(r);
      view.setUint16(at, start & 0xffff, true);
      view.setUint16(at + 2, runEnd(r) - start - 1, true);
    }
  }
  return RoaringBitmap32.deserialize(out, 'portable');
}
