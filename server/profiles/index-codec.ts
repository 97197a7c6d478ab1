// The profile index as bytes, for its snapshot: a JSON header (paths, their string values, scales, per-user values)
// followed by every bitmap in the portable roaring format, in header order. Loading it is a few deserializations
// per path instead of re-reading and re-parsing every profile row.
import roaring from 'roaring';
import { BitSlicedIndex } from './index-bsi';
import { ProfileIndex } from './index-tenant';

const { RoaringBitmap32: Bitmap } = roaring;
const FORMAT = 1;

type FieldHeader = {
  segments: string[];
  scale: number;
  strings: string[];
  highCardinality: Array<[number, string]> | null;
  others: Array<[number, unknown]>;
  depth: number;
  timeDepth: number;
};

/** Encoding work between two turns of the event loop: a 2.5M-profile index took 9-24 ms to encode in one go. */
const ENCODE_SLICE_MS = 5;

/**
 * The index's bytes, its bitmaps serialized a slice at a time with other work served between: the caller keeps the
 * index unchanged meanwhile (the snapshot is written holding the tenant's turn).
 */
export async function encodeIndex(index: ProfileIndex): Promise<Buffer> {
  let sliceStart = performance.now();
  const serialized = async (bitmap: InstanceType<typeof Bitmap>) => {
    if (performance.now() - sliceStart >= ENCODE_SLICE_MS) {
      await new Promise((resolve) => setImmediate(resolve));
      sliceStart = performance.now();
    }
    return bitmap.serialize('portable');
  };
  const bitmaps: Uint8Array[] = [await serialized(index.users)];
  const fields: FieldHeader[] = [];
  for (const { segments, field } of index.paths()) {
    fields.push({
      segments,
      scale: field.scale,
      strings: [...field.strings.keys()],
      highCardinality: field.highCardinality ? [...field.highCardinality] : null,
      others: [...field.others],
      depth: field.numbers.depth,
      timeDepth: field.times.depth,
    });
    for (const bitmap of field.bitmaps()) bitmaps.push(await serialized(bitmap));
  }
  const header = Buffer.from(JSON.stringify({ format: FORMAT, fields, sizes: bitmaps.map((b) => b.byteLength) }));
  const length = Buffer.alloc(4);
  length.writeUInt32LE(header.byteLength);
  return Buffer.concat([length, header, ...bitmaps.map((b) => Buffer.from(b.buffer, b.byteOffset, b.byteLength))]);
}

/** Null when the bytes are not a snapshot this version reads (the caller rebuilds from rows instead). */
export function decodeIndex(bytes: Uint8Array): ProfileIndex | null {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerLength = buffer.readUInt32LE(0);
  const header = JSON.parse(buffer.subarray(4, 4 + headerLength).toString()) as { format: number; fields: FieldHeader[]; sizes: number[] };
  if (header.format !== FORMAT) return null;
  let at = 4 + headerLength;
  let next = 0;
  const bitmap = () => {
    const size = header.sizes[next++];
    const read = Bitmap.deserialize(buffer.subarray(at, at + size), 'portable');
    at += size;
    return read;
  };
  const index = new ProfileIndex();
  index.users.orInPlace(bitmap());
  for (const h of header.fields) {
    const field = index.restorePath(h.segments);
    field.scale = h.scale;
    // Same order as FieldIndex.bitmaps(): presence, objects, trues, falses, strings…, numbers…, times…
    for (const target of [field.presence, field.objects, field.trues, field.falses]) target.orInPlace(bitmap());
    for (const value of h.strings) field.strings.set(value, bitmap());
    field.highCardinality = h.highCardinality ? new Map(h.highCardinality) : null;
    for (const [user, value] of h.others) field.others.set(user, value);
    field.numbers = restoreBsi(h.depth, bitmap);
    field.times = restoreBsi(h.timeDepth, bitmap);
  }
  return index;
}

function restoreBsi(depth: number, bitmap: () => InstanceType<typeof Bitmap>): BitSlicedIndex {
  const exists = bitmap();
  const negative = bitmap();
  return new BitSlicedIndex(exists, negative, Array.from({ length: depth }, bitmap));
}
