import { expect, it, vi } from 'vitest';
import { RoaringBitmap32 } from '../../server/crowd/bitmap';
import { FairTurns, SLICE_MS, Slices, unionInSlices } from '../../server/engine/slices';

// The engine thread's turns between slices of long work are shared per tenant, not per task: a tenant running many
// partitions' backlogs at once must not get a slice for each of them before another tenant gets one.

/** Runs `tasks` loops of `turns` slices each for `tenant`, recording every turn it is given in `order`. */
function work(fair: FairTurns, tenant: string, tasks: number, turns: number, order: string[]): Promise<void>[] {
  return Array.from({ length: tasks }, async (_, task) => {
    for (let turn = 0; turn < turns; turn++) {
      await fair.next(tenant);
      order.push(`${tenant}${task}`);
    }
  });
}

it('gives a tenant with one task a turn after at most one turn of a tenant with eight', async () => {
  const fair = new FairTurns();
  const order: string[] = [];
  const busy = work(fair, 'a', 8, 5, order);
  const quiet = work(fair, 'b', 1, 5, order);
  await Promise.all([...busy, ...quiet]);

  const tenants = order.map((turn) => turn[0]);
  expect(tenants.filter((t) => t === 'a')).toHaveLength(40);
  // a b a b … while both wait, then a's remaining turns.
  expect(tenants.slice(0, 10).join('')).toBe('ababababab');
  expect(new Set(tenants.slice(10))).toEqual(new Set(['a']));
  expect(fair.waitingTenants).toBe(0);
});

it("serves one tenant's tasks first come, first served", async () => {
  const fair = new FairTurns();
  const order: string[] = [];
  await Promise.all(work(fair, 'a', 3, 2, order));
  expect(order).toEqual(['a0', 'a1', 'a2', 'a0', 'a1', 'a2']);
});

it('lets the rest of the event loop run between two turns', async () => {
  const fair = new FairTurns();
  const order: string[] = [];
  const busy = work(fair, 'a', 2, 3, order);
  // Work outside the scheduler (a message, an I/O callback) queued while the turns are being handed out.
  await fair.next('b');
  setImmediate(() => order.push('outside'));
  await Promise.all(busy);
  const outside = order.indexOf('outside');
  expect(outside).toBeGreaterThan(0);
  expect(outside).toBeLessThan(order.length - 1);
});

it("unions a step's shards one OR a slice, giving another tenant its turn between them, into their OR", async () => {
  // Every reading of the monotonic clock is a slice later than the last: each OR fills a slice.
  let thread = 0;
  const clock = vi.spyOn(performance, 'now').mockImplementation(() => (thread += SLICE_MS));
  try {
    const fair = new FairTurns();
    const order: string[] = [];
    const shards = [0, 1, 2].map((shard) => RoaringBitmap32.from([shard, shard + 100, shard + 1_000_000]));
    const union = unionInSlices(new Slices(fair, 'a'), shards).then((bitmap) => (order.push('a done'), bitmap));
    const other = work(fair, 'b', 1, 2, order);
    const [bitmap] = await Promise.all([union, ...other]);
    expect(bitmap.toArray()).toEqual([0, 1, 2, 100, 101, 102, 1_000_000, 1_000_001, 1_000_002]);
    expect(order).toEqual(['b0', 'b0', 'a done']);
  } finally {
    clock.mockRestore();
  }
});
