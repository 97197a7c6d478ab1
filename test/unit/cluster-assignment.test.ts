import { describe, expect, it } from 'vitest';
import { assignPartitions } from '../../server/cluster/assignment';

const load = (owners: string[]) => owners.reduce((m, o) => m.set(o, (m.get(o) ?? 0) + 1), new Map<string, number>());

describe('assignPartitions (rendezvous hashing with a load bound)', () => {
  it('spreads 8 partitions over 3 members with none holding more than 3, for every tenant', () => {
    for (let t = 0; t < 200; t++) {
      const owners = assignPartitions(['host:301', 'host:302', 'host:303'], `tenant-${t}`, 8);
      expect(owners).toHaveLength(8);
      expect(Math.max(...load(owners).values())).toBeLessThanOrEqual(3);
      expect(load(owners).size).toBe(3);
    }
  });

  it('is the same on every member: it depends on the set of members, not their order', () => {
    expect(assignPartitions(['b', 'c', 'a'], 'acme', 16)).toEqual(assignPartitions(['a', 'b', 'c'], 'acme', 16));
  });

  it('moves few partitions when a member joins or leaves', () => {
    let moved = 0;
    for (let t = 0; t < 100; t++) {
      const before = assignPartitions(['a', 'b'], `tenant-${t}`, 8);
      const after = assignPartitions(['a', 'b', 'c'], `tenant-${t}`, 8);
      moved += after.filter((owner, p) => owner !== before[p]).length;
      // Leaving: the partitions of the member that left move, the others mostly stay.
      const left = assignPartitions(['a', 'c'], `tenant-${t}`, 8);
      expect(left.every((owner) => owner === 'a' || owner === 'c')).toBe(true);
    }
    // The new member's fair share is 8/3 of 8 per tenant; rebalancing moves about that, not everything.
    expect(moved / 100).toBeLessThan(4);
    expect(moved / 100).toBeGreaterThan(2);
  });

  it('gives every partition to a live member gathering the tenant, and ignores a gather by a member that is gone', () => {
    expect(assignPartitions(['a', 'b', 'c'], 'acme', 8, 'b')).toEqual(Array(8).fill('b'));
    expect(assignPartitions(['a', 'c'], 'acme', 8, 'b')).toEqual(assignPartitions(['a', 'c'], 'acme', 8));
    expect(assignPartitions([], 'acme', 8)).toEqual([]);
  });
});
