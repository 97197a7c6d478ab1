// Membership of one value in a bitmap stored in roaring's portable format, read from the bytes in place: a binary
// search of the container keys, then of the one container that may hold the value. Deserializing copies every
// container (a bulk move of a million users is a megabyte) to answer one question; where-is-user asks it of every
// bulk journal row in the user's partition. Format: https://github.com/RoaringBitmap/RoaringFormatSpec
const SERIAL_COOKIE_NO_RUNCONTAINER = 12346;
const SERIAL_COOKIE = 12347;
/** Below this many containers, a bitmap with run containers has no offset table. */
const NO_OFFSET_THRESHOLD = 4;
const MAX_ARRAY_CARDINALITY = 4096;
const BITMAP_CONTAINER_BYTES = 8192;

const malformed = () => new Error('a stored bitmap is not in the portable roaring format');

/** Whether the portable roaring bitmap `bytes` holds `value` (a uint32). */
export function portableContains(bytes: Uint8Array, value: number): boolean {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.byteLength < 4) throw malformed();
  const cookie = view.getUint32(0, true);
  let size: number;
  let at: number;
  let runFlags = -1;
  if ((cookie & 0xffff) === SERIAL_COOKIE) {
    size = (cookie >>> 16) + 1;
    runFlags = 4;
    at = 4 + ((size + 7) >>> 3);
  } else if (cookie === SERIAL_COOKIE_NO_RUNCONTAINER) {
    if (bytes.byteLength < 8) throw malformed();
    size = view.getUint32(4, true);
    at = 8;
  } else throw malformed();
  const headerAt = at;
  if (headerAt + size * 4 > bytes.byteLength) throw malformed();
  const key = value >>> 16;
  const low = value & 0xffff;
  // Container keys are sorted: binary search the descriptive header (u16 key, u16 cardinality - 1 per container).
  let lo = 0;
  let hi = size - 1;
  let index = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const midKey = view.getUint16(headerAt + mid * 4, true);
    if (midKey < key) lo = mid + 1;
    else if (midKey > key) hi = mid - 1;
    else {
      index = mid;
      break;
    }
  }
  if (index < 0) return false;
  const isRun = (i: number) => runFlags >= 0 && (bytes[runFlags + (i >>> 3)] & (1 << (i & 7))) !== 0;
  const cardinality = (i: number) => view.getUint16(headerAt + i * 4 + 2, true) + 1;
  const afterHeader = headerAt + size * 4;
  let containerAt: number;
  if (runFlags < 0 || size >= NO_OFFSET_THRESHOLD) {
    if (afterHeader + size * 4 > bytes.byteLength) throw malformed();
    containerAt = view.getUint32(afterHeader + index * 4, true);
  } else {
    // Few containers and no offsets: walk the ones before it.
    containerAt = afterHeader;
    for (let i = 0; i < index; i++) {
      if (isRun(i)) containerAt += 2 + 4 * view.getUint16(containerAt, true);
      else containerAt += cardinality(i) > MAX_ARRAY_CARDINALITY ? BITMAP_CONTAINER_BYTES : 2 * cardinality(i);
    }
  }
  if (isRun(index)) return runContains(view, containerAt, low);
  const count = cardinality(index);
  if (count > MAX_ARRAY_CARDINALITY) {
    if (containerAt + BITMAP_CONTAINER_BYTES > bytes.byteLength) throw malformed();
    return (bytes[containerAt + (low >>> 3)] & (1 << (low & 7))) !== 0;
  }
  if (containerAt + 2 * count > bytes.byteLength) throw malformed();
  return sortedContains(view, containerAt, count, low);
}

/** Binary search of `count` sorted u16 values at `at`. */
function sortedContains(view: DataView, at: number, count: number, value: number): boolean {
  let lo = 0;
  let hi = count - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const found = view.getUint16(at + mid * 2, true);
    if (found < value) lo = mid + 1;
    else if (found > value) hi = mid - 1;
    else return true;
  }
  return false;
}

/** A run container: u16 run count, then (start, length - 1) pairs sorted by start. */
function runContains(view: DataView, at: number, value: number): boolean {
  const runs = view.getUint16(at, true);
  if (at + 2 + runs * 4 > view.byteLength) throw malformed();
  let lo = 0;
  let hi = runs - 1;
  // The last run starting at or before the value holds it if the value is within its length.
  let candidate = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    if (view.getUint16(at + 2 + mid * 4, true) <= value) {
      candidate = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  if (candidate < 0) return false;
  const start = view.getUint16(at + 2 + candidate * 4, true);
  return value - start <= view.getUint16(at + 4 + candidate * 4, true);
}
