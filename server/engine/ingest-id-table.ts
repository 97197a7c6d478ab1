// The event ids of a tenant's dedupe window as 128-bit hashes, so the engine thread decides duplicates without id
// strings: the request thread hashes them (`hashIds`), the log's records keep the hashes, not the ids (16 bytes an id,
// where a UUID took ~39 as JSON text). The table (open addressing, linear probing, one typed array) probes with the
// first 64 bits; its owner compares the other 64 (`same`) before calling two ids one. Two different ids are then taken
// for one only if all 128 bits agree: were the hash a random function, for a tenant sending a billion ids a day a
// chance of about 10^-21 a day.

/** Per slot: hash word 0, word 1, list, position. Words 0:0 mark an empty slot (`hashIds` never gives them). */
const SLOT = 4;
const INITIAL_SLOTS = 1024;
/** 32-bit words per id hash. */
export const ID_HASH_WORDS = 4;

/**
 * 128-bit hashes of `ids` as four 32-bit words each at `out[4i]`…`out[4i + 3]`; all 0 for an undefined id. Four
 * independent multiplicative lanes over the UTF-16 code units, each finished with murmur3's fmix32 over all four, so
 * word 1 alone (the table's probe start) is well mixed.
 */
export function hashIds(ids: readonly (string | undefined)[], out: Uint32Array = new Uint32Array(ID_HASH_WORDS * ids.length)): Uint32Array {
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i];
    if (id === undefined) continue;
    let a = 0x811c9dc5 ^ id.length;
    let b = 0x9747b28c;
    let c = 0x2545f491;
    let d = 0x68e31da4 ^ id.length;
    for (let at = 0; at < id.length; at++) {
      const code = id.charCodeAt(at);
      a = Math.imul(a ^ code, 0x01000193);
      b = Math.imul(b ^ code, 0x5bd1e995);
      b ^= b >>> 13;
      c = Math.imul(c ^ code, 0x85ebca77);
      c ^= c >>> 15;
      d = Math.imul(d ^ code, 0xc2b2ae3d);
      d ^= d >>> 11;
    }
    let first = fmix(a ^ Math.imul(b, 0x27d4eb2f) ^ Math.imul(c, 0x9e3779b1));
    const second = fmix(b ^ Math.imul(first, 0x165667b1) ^ d);
    if (first === 0 && second === 0) first = 1;
    out[ID_HASH_WORDS * i] = first;
    out[ID_HASH_WORDS * i + 1] = second;
    out[ID_HASH_WORDS * i + 2] = fmix(c ^ Math.imul(second, 0x27d4eb2f) ^ a);
    out[ID_HASH_WORDS * i + 3] = fmix(d ^ Math.imul(c, 0x165667b1) ^ Math.imul(first, 0x9e3779b1));
  }
  return out;
}

function fmix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/**
 * Entries name where their id can be read back: a `list` (the owner's number for a request's ids) and a `position`
 * in it. `same(list, position, otherList, otherPosition)` answers whether the two places hold equal ids.
 */
export class IdTable {
  private slots: Uint32Array;
  private mask: number;
  size = 0;

  /** `expected`: entries it will hold, so it is sized to never grow for them (a request's ids). */
  constructor(
    private readonly same: (list: number, position: number, otherList: number, otherPosition: number) => boolean,
    expected = 0,
  ) {
    let slots = INITIAL_SLOTS;
    while (slots < 2 * expected + 2) slots *= 2;
    this.slots = new Uint32Array(SLOT * slots);
    this.mask = slots - 1;
  }

  /** Adds the id at (list, position) unless an entry holds an equal id: false then (a duplicate), and nothing is added. */
  claim(high: number, low: number, list: number, position: number): boolean {
    const { slots, mask } = this;
    let i = low & mask;
    for (;;) {
      const at = i * SLOT;
      const slotHigh = slots[at];
      const slotLow = slots[at + 1];
      if (slotHigh === 0 && slotLow === 0) break;
      if (slotHigh === high && slotLow === low && this.same(slots[at + 2], slots[at + 3], list, position)) return false;
      i = (i + 1) & mask;
    }
    this.put(i, high, low, list, position);
    return true;
  }

  /** Adds an entry without looking for an equal id (ids the log holds already, read back from the table). */
  add(high: number, low: number, list: number, position: number): void {
    const { slots, mask } = this;
    let i = low & mask;
    while (slots[i * SLOT] !== 0 || slots[i * SLOT + 1] !== 0) i = (i + 1) & mask;
    this.put(i, high, low, list, position);
  }

  /** Removes the entry of (list, position), if there is one. Backward-shift deletion: no tombstones slow later probes. */
  remove(high: number, low: number, list: number, position: number): void {
    const { slots, mask } = this;
    let i = low & mask;
    for (;;) {
      const at = i * SLOT;
      if (slots[at] === 0 && slots[at + 1] === 0) return;
      if (slots[at] === high && slots[at + 1] === low && slots[at + 2] === list && slots[at + 3] === position) break;
      i = (i + 1) & mask;
    }
    this.size--;
    for (let j = (i + 1) & mask; slots[j * SLOT] !== 0 || slots[j * SLOT + 1] !== 0; j = (j + 1) & mask) {
      const home = slots[j * SLOT + 1] & mask;
      // The entry at j may move back to the hole at i unless its probe starts after i (cyclically, in (i, j]).
      if (i <= j ? i < home && home <= j : i < home || home <= j) continue;
      slots.copyWithin(i * SLOT, j * SLOT, j * SLOT + SLOT);
      i = j;
    }
    slots.fill(0, i * SLOT, i * SLOT + SLOT);
  }

  private put(i: number, high: number, low: number, list: number, position: number): void {
    const at = i * SLOT;
    this.slots[at] = high;
    this.slots[at + 1] = low;
    this.slots[at + 2] = list;
    this.slots[at + 3] = position;
    // At most half full: linear probes stay short.
    if (++this.size * 2 > this.mask + 1) this.grow();
  }

  /** Twice the slots, entries placed again in one tight loop (a call per entry cost a third of a keyed run's dedupe). */
  private grow(): void {
    const old = this.slots;
    const slots = new Uint32Array(old.length * 2);
    const mask = (this.mask + 1) * 2 - 1;
    for (let at = 0; at < old.length; at += SLOT) {
      if (old[at] === 0 && old[at + 1] === 0) continue;
      let i = old[at + 1] & mask;
      while (slots[i * SLOT] !== 0 || slots[i * SLOT + 1] !== 0) i = (i + 1) & mask;
      const to = i * SLOT;
      slots[to] = old[at];
      slots[to + 1] = old[at + 1];
      slots[to + 2] = old[at + 2];
      slots[to + 3] = old[at + 3];
    }
    this.slots = slots;
    this.mask = mask;
  }
}
