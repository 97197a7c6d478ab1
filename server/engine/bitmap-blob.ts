// One blob of bitmaps: a 4-byte length, a JSON header naming each bitmap's byte length, then the bitmaps' portable
// roaring bytes in the header's order. A shard's checkpoint (shard.ts) and a crowd update's change
// (crowd-changes.ts) are written so.
import { compactBytes, RoaringBitmap32 } from '../crowd/bitmap';

/** Writes bitmaps as the header's `put` returns their lengths; `build` makes the header. */
export function encodeBitmapBlob(build: (put: (bitmap: RoaringBitmap32) => number) => unknown): Buffer {
  const parts: Uint8Array[] = [];
  const header = build((bitmap) => {
    const bytes = compactBytes(bitmap);
    parts.push(bytes);
    return bytes.byteLength;
  });
  const head = Buffer.from(JSON.stringify(header));
  const length = Buffer.alloc(4);
  length.writeUInt32LE(head.byteLength);
  return Buffer.concat([length, head, ...parts]);
}

/** The header, and `take` handing out the bitmaps in order by the lengths the header names. */
export function decodeBitmapBlob<Header>(data: Uint8Array): { header: Header; take: (length: number) => RoaringBitmap32 } {
  const bytes = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const headLength = bytes.readUInt32LE(0);
  const header = JSON.parse(bytes.subarray(4, 4 + headLength).toString()) as Header;
  let at = 4 + headLength;
  const take = (length: number) => {
    const bitmap = RoaringBitmap32.deserialize(bytes.subarray(at, at + length), 'portable');
    at += length;
    return bitmap;
  };
  return { header, take };
}
