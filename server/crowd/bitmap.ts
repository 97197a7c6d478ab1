import roaring from 'roaring';
import { AppError } from '../errors';

// roaring is CommonJS: its named exports are only reachable through the default import under ESM.
export const RoaringBitmap32 = roaring.RoaringBitmap32;
export type RoaringBitmap32 = InstanceType<typeof roaring.RoaringBitmap32>;

/** User ids are uint32: 0 … 4294967295. */
export const MAX_USER_ID = 4294967295;

/** The portable roaring format (readable by CRoaring, pyroaring, Java and Go RoaringBitmap). */
export function serializeBitmap(bitmap: RoaringBitmap32): Buffer<ArrayBuffer> {
  const bytes = bitmap.serialize('portable');
  // A fresh, unshared buffer: typed as such so Prisma `Bytes` fields and Response bodies accept it.
  return Buffer.from(bytes.buffer as ArrayBuffer, bytes.byteOffset, bytes.byteLength);
}

/**
 * Reads portable roaring bytes. Truncated or corrupt input, and bytes left over after a complete bitmap
 * (two files glued together, a wrong format), are refused with `invalid_bitmap`.
 */
export function deserializeBitmap(bytes: Uint8Array): RoaringBitmap32 {
  if (bytes.byteLength === 0) throw new AppError('invalid_bitmap', 'The roaring bitmap is empty (0 bytes); even an empty portable bitmap has a header');
  let bitmap: RoaringBitmap32;
  try {
    bitmap = RoaringBitmap32.deserialize(bytes, 'portable');
  } catch {
    throw new AppError('invalid_bitmap', `The ${bytes.byteLength} bytes are not a complete portable-format roaring bitmap (truncated or corrupt)`);
  }
  const expected = bitmap.getSerializationSizeInBytes('portable');
  if (expected !== bytes.byteLength) {
    throw new AppError('invalid_bitmap', `The portable roaring bitmap ends after ${expected} bytes but the upload has ${bytes.byteLength}`);
  }
  return bitmap;
}
