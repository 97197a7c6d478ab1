import { describe, expect, it } from 'vitest';
import { RoaringBitmap32 } from '../../server/crowd/bitmap';
import { portableContains } from '../../server/crowd/portable-contains';

/** A seeded generator (mulberry32), so a failure names a case that can be run again. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Bitmaps with every container kind (array, bitmap, run), with and without the offset table. */
function bitmaps(seed: number): { name: string; bitmap: RoaringBitmap32 }[] {
  const next = random(seed);
  const sparse = (containers: number) => {
    const bitmap = new RoaringBitmap32();
    for (let c = 0; c < containers; c++) for (let i = 0; i < 50; i++) bitmap.add(c * 7 * 65536 + Math.floor(next() * 65536));
    return bitmap;
  };
  const dense = (containers: number) => {
    const bitmap = new RoaringBitmap32();
    for (let c = 0; c < containers; c++) for (let i = 0; i < 20_000; i++) bitmap.add(c * 3 * 65536 + Math.floor(next() * 65536));
    return bitmap;
  };
  const runs = (containers: number) => {
    const bitmap = new RoaringBitmap32();
    for (let c = 0; c < containers; c++) {
      for (let r = 0; r < 20; r++) {
        const start = c * 65536 + Math.floor(next() * 60_000);
        bitmap.addRange(start, start + 1 + Math.floor(next() * 3_000));
      }
    }
    bitmap.runOptimize();
    return bitmap;
  };
  const mixed = (withRuns: boolean) => {
    const bitmap = new RoaringBitmap32([...sparse(2)].map((v) => v + 40 * 65536));
    bitmap.orInPlace(dense(2));
    bitmap.addRange(100 * 65536, 100 * 65536 + 30_000);
    bitmap.add(4294967295);
    if (withRuns) bitmap.runOptimize();
    return bitmap;
  };
  return [
    { name: 'empty', bitmap: new RoaringBitmap32() },
    { name: 'one value', bitmap: new RoaringBitmap32([123_456]) },
    { name: 'arrays, 1 container', bitmap: sparse(1) },
    { name: 'arrays, 9 containers', bitmap: sparse(9) },
    { name: 'bitmaps, 2 containers', bitmap: dense(2) },
    { name: 'runs, 3 containers (no offset table)', bitmap: runs(3) },
    { name: 'runs, 6 containers (offset table)', bitmap: runs(6) },
    { name: 'mixed, run-optimized', bitmap: mixed(true) },
    { name: 'mixed, not run-optimized', bitmap: mixed(false) },
  ];
}

describe('portableContains', () => {
  for (const seed of [1, 2, 3]) {
    it(`answers as RoaringBitmap32.has for members, neighbours and random values (seed ${seed})`, () => {
      const next = random(seed * 101);
      for (const { name, bitmap } of bitmaps(seed)) {
        const bytes = new Uint8Array(bitmap.serialize('portable'));
        const members = bitmap.toArray();
        const probes = new Set<number>([0, 1, 65535, 65536, 4294967295]);
        for (let i = 0; i < 300 && members.length > 0; i++) {
          const member = members[Math.floor(next() * members.length)];
          probes.add(member);
          if (member > 0) probes.add(member - 1);
          if (member < 4294967295) probes.add(member + 1);
        }
        for (let i = 0; i < 300; i++) probes.add(Math.floor(next() * 4294967296));
        for (let i = 0; i < 300; i++) probes.add(Math.floor(next() * 12 * 65536));
        const wrong = [...probes].filter((value) => portableContains(bytes, value) !== bitmap.has(value));
        expect(wrong, name).toEqual([]);
        // At least some probes are members, so the test cannot pass by answering false everywhere.
        if (members.length > 0)
          expect(
            [...probes].some((value) => portableContains(bytes, value)),
            name,
          ).toBe(true);
      }
    });
  }

  it('reads a bitmap inside a larger buffer (a row read from the database)', () => {
    const bitmap = new RoaringBitmap32([5, 70_000, 1_000_000]);
    const serialized = bitmap.serialize('portable');
    const padded = new Uint8Array(serialized.length + 16);
    padded.set(serialized, 8);
    const view = padded.subarray(8, 8 + serialized.length);
    expect([5, 6, 70_000, 1_000_000, 1_000_001].map((value) => portableContains(view, value))).toEqual([true, false, true, true, false]);
  });

  it('refuses bytes that are not a portable bitmap', () => {
    expect(() => portableContains(new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8]), 1)).toThrow(/portable roaring/);
    expect(() => portableContains(new Uint8Array([1]), 1)).toThrow(/portable roaring/);
  });
});
