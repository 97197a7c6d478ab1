import { describe, expect, it } from 'vitest';
import { RoaringBitmap32 } from '../../server/crowd/bitmap';
import { byPartition } from '../../server/engine/operations';

/** The definition: user u belongs to partition u % P. */
function expected(users: RoaringBitmap32, partitions: number): number[][] {
  const parts: number[][] = Array.from({ length: partitions }, () => []);
  for (const user of users) parts[user % partitions].push(user);
  return parts;
}

function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state;
  };
}

describe('byPartition splits users by user % partitions', () => {
  const crowds: Record<string, () => RoaringBitmap32> = {
    // dense: split with masks
    'a dense range from 0': () => RoaringBitmap32.fromRange(0, 300_000),
    'a dense range starting mid-container at an odd id': () => RoaringBitmap32.fromRange(70_001, 270_003),
    'dense with holes': () => {
      const users = RoaringBitmap32.fromRange(5, 200_000);
      users.removeRange(60_000, 61_234);
      const random = seeded(7);
      for (let i = 0; i < 5_000; i++) users.remove(random() % 200_000);
      return users;
    },
    'the top of the id space': () => RoaringBitmap32.fromRange(4294967295 - 100_000, 4294967296),
    // sparse: split per id
    'random ids over the whole id space': () => {
      const random = seeded(11);
      return RoaringBitmap32.from(Array.from({ length: 20_000 }, () => random()));
    },
    'one user': () => RoaringBitmap32.of(123_457),
    nobody: () => new RoaringBitmap32(),
  };
  for (const [name, make] of Object.entries(crowds)) {
    for (const partitions of [1, 3, 8, 16, 17, 64]) {
      it(`${name}, ${partitions} partitions`, () => {
        const users = make();
        const parts = byPartition(users, partitions);
        expect(parts).toHaveLength(partitions);
        expect(parts.map((part) => part.toArray())).toEqual(expected(users, partitions));
      });
    }
  }
});
