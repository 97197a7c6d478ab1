// The deterministic per-user hash that split steps and holdout groups share: a user's place is a pure function of
// (user id, salt), so it needs no stored assignment, is the same in every version, process and replay, and a
// marketer can correlate two journeys on purpose by giving them the same seed. Pure: the canvas may import it.

/** FNV-1a over a string's UTF-16 code units: turns a salt (workflow id and step name, or a seed) into a 32-bit seed. */
export function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return hash;
}

/** murmur3's 32-bit finalizer: a well-mixed, deterministic hash of (user, seed). */
export function mix(user: number, seed: number): number {
  let h = (user ^ seed) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}
