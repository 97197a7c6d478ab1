import roaring from 'roaring';
import { AppError } from '../errors';
import { validatePortable } from './roaring-validate';

// roaring is CommonJS: its named exports are only reachable through the default import under ESM.
export const RoaringBitmap32 = roaring.RoaringBitmap32;
export type RoaringBitmap32 = InstanceType<typeof roaring.RoaringBitmap32>;

/** User ids are uint32: 0 … 4294967295. */
export const MAX_USER_ID = 4294967295;

/**
 * Sorts uint32 values in place, two 16-bit counting passes through `scratch` (at least as long as `values`). About
 * 3× faster than TypedArray#sort on a million random IDs, and roaring takes sorted batches several times faster.
 */
export function radixSortUint32(values: Uint32Array, scratch: Uint32Array): Uint32Array {
  // Typed arrays drop writes past their end silently: a short scratch would lose IDs.
  if (scratch.length < values.length) throw new RangeError(`radixSortUint32: scratch holds ${scratch.length} values, ${values.length} needed`);
  const low = new Uint32Array(65536);
  const high = new Uint32Array(65536);
  const n = values.length;
  for (let i = 0; i < n; i++) {
    const value = values[i];
    low[value & 0xffff]++;
    high[value >>> 16]++;
  }
  for (let digit = 0, lowAt = 0, highAt = 0; digit < 65536; digit++) {
    const lowCount = low[digit];
    low[digit] = lowAt;
    lowAt += lowCount;
    const highCount = high[digit];
    high[digit] = highAt;
    highAt += highCount;
  }
  for (let i = 0; i < n; i++) {
    const value = values[i];
    scratch[low[value & 0xffff]++] = value;
  }
  for (let i = 0; i < n; i++) {
    const value = scratch[i];
    values[high[value >>> 16]++] = value;
  }
  return values;
}

/**
 * The portable bytes of a bitmap the engine writes (journal moves, checkpoints), its containers run-compressed first:
 * a partition's share of a dense crowd is runs of whole id blocks (server/engine/partitioning.ts), 60× smaller as run
 * containers than as the bitmap containers set operations leave. In place: the users are the same, only their
 * containers change, so it is safe on a bitmap others hold too.
 */
export function compactBytes(bitmap: RoaringBitmap32): Uint8Array {
  if (!bitmap.isFrozen) bitmap.runOptimize();
  return bitmap.serialize('portable');
}

/** The portable roaring format (readable by CRoaring, pyroaring, Java and Go RoaringBitmap). */
export function serializeBitmap(bitmap: RoaringBitmap32): Buffer<ArrayBuffer> {
  const bytes = bitmap.serialize('portable');
  // A fresh, unshared buffer: typed as such so Prisma `Bytes` fields and Response bodies accept it.
  return Buffer.from(bytes.buffer as ArrayBuffer, bytes.byteOffset, bytes.byteLength);
}

/**
 * Reads portable roaring bytes, checked first (server/crowd/roaring-validate.ts): truncated or corrupt input, bytes
 * left over after a complete bitmap (two files glued together, a wrong format) and containers that break roaring's
 * invariants (unsorted or repeated keys and values, overlapping runs, wrong cardinalities) are refused with
 * `invalid_bitmap`. `checkUsers` sees the user count once the bytes are known valid, before anything is allocated.
 */
export function deserializeBitmap(bytes: Uint8Array, checkUsers: (users: number) => void = () => undefined): RoaringBitmap32 {
  if (bytes.byteLength === 0) throw new AppError('invalid_bitmap', 'The roaring bitmap is empty (0 bytes); even an empty portable bitmap has a header');
  checkUsers(validatePortable(bytes));
  return RoaringBitmap32.deserialize(bytes, 'portable');
}
