// The number of users a portable-format roaring bitmap holds, read from its header alone (RoaringFormatSpec: a
// cookie, then per container its 16-bit key and cardinality - 1), so an upload can be refused for what it would
// become before it is deserialized: 29 KB of run containers can hold 2^27 users (0.5 GB once in memory).

const SERIAL_COOKIE_NO_RUNCONTAINER = 12346;
const SERIAL_COOKIE = 12347;

/** The cardinality the header declares, or null when the bytes do not start with a readable header. */
export function portableCardinality(bytes: Uint8Array): number | null {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.byteLength < 4) return null;
  const cookie = view.getUint32(0, true);
  let containers: number;
  let at: number;
  if ((cookie & 0xffff) === SERIAL_COOKIE) {
    containers = (cookie >>> 16) + 1;
    at = 4 + Math.ceil(containers / 8); // skip the bitset of run containers
  } else if (cookie === SERIAL_COOKIE_NO_RUNCONTAINER) {
    if (bytes.byteLength < 8) return null;
    containers = view.getUint32(4, true);
    at = 8;
  } else return null;
  if (containers > 65_536 || at + containers * 4 > bytes.byteLength) return null;
  let total = 0;
  for (let i = 0; i < containers; i++) total += view.getUint16(at + i * 4 + 2, true) + 1;
  return total;
}
