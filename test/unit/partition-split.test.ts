import { describe, expect, it } from 'vitest';
import { RoaringBitmap32 } from '../../server/crowd/bitmap';
import { byPartition, USER_BLOCK } from '../../server/engine/partitioning';

/** The definition: user u belongs to partition floor(u / B) % P (B = 1 for tenants made before blocks). */
function expected(users: RoaringBitmap32, partitions: number, userBlock: number): number[][] {
  const parts: number[][] = Array.from({ length: partitions }, () => []);
  for (const user of users) parts[Math.floor(user / userBlock) % partitions].push(user);
  return parts;
}

function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state;
  };
}

describe('byPartition splits users by block of ids, round-robin over the partitions', () => {
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
    for (const userBlock of [1, 64, USER_BLOCK]) {
      for (const partitions of [1, 3, 8, 16, 17, 64, 256]) {
        it(`${name}, ${partitions} partitions, blocks of ${userBlock}`, () => {
          const users = make();
          const parts = byPartition(users, { partitions, userBlock });
          expect(parts).toHaveLength(partitions);
          const wanted = expected(users, partitions, userBlock);
          // Compared as bitmaps (toEqual over 300,000-id arrays took seconds), with each part's size to say where.
          expect(parts.map((part, p) => [part.size, part.isEqual(RoaringBitmap32.from(wanted[p]))])).toEqual(wanted.map((ids) => [ids.length, true]));
        });
      }
    }
  }

  it("keeps a dense crowd's parts as runs: a 10M-user range is a few hundred KB over 8 partitions, not 10 MB", () => {
    const users = RoaringBitmap32.fromRange(0, 10_000_000);
    const bytes = (userBlock: number) => byPartition(users, { partitions: 8, userBlock }).reduce((sum, part) => sum + part.serialize('portable').byteLength, 0);
    expect(bytes(USER_BLOCK)).toBeLessThan(200_000);
    expect(bytes(1)).toBeGreaterThan(9_000_000); // every eighth id: bitmap containers, what blocks avoid
  });
});
