// A commit's lease fence holds the lease row against a change of owner until it commits, and (PostgreSQL) against
// nothing else: a takeover waits for the commit, a lease renewal does not. Renewals used to queue behind the timer
// firings' fences and the next firings' fences behind the renewal (issue 33: 1,000 tenants' minute firing).
import { afterEach, describe, expect, it } from 'vitest';
import { commitBatch } from '../../server/engine/store/commit';
import { acquireLease, renewLeases, type Lease } from '../../server/engine/store/leases';
import { newId } from '../../server/ids';
import { database } from '../../server/storage/database';
import { db } from '../../server/storage/db';

const onPostgres = process.env.CROWDFLOW_TEST_PROVIDER === 'postgres';
const LEASE_MS = 15_000;

/** A commit fenced by `lease` that stays open (its fence already run) until `release` is called. */
function commitHeldOpen(lease: Lease) {
  let release!: () => void;
  let fenced!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const inside = new Promise<void>((resolve) => (fenced = resolve));
  const committed = commitBatch(database(), lease.tenantId, {
    leases: [lease],
    moves: [],
    now: Date.now(),
    also: async () => {
      fenced();
      await gate;
    },
  });
  return { inside, release, committed };
}

/** Whether the promise settles within `ms` of real time (the database's own locks decide, not a clock of ours). */
async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  const settled = await Promise.race([
    promise.then(
      () => true,
      () => true,
    ),
    late,
  ]);
  clearTimeout(timer);
  return settled;
}

let open: ReturnType<typeof commitHeldOpen> | undefined;
afterEach(async () => {
  open?.release();
  await open?.committed.catch(() => undefined);
  open = undefined;
});

async function heldLease(): Promise<Lease> {
  const tenantId = newId('tn');
  await db().tenant.create({ data: { id: tenantId, name: tenantId.toLowerCase(), partitions: 1 } });
  const taken = await acquireLease(database(), tenantId, 0, 'first-owner', Date.now(), LEASE_MS);
  if (!taken) throw new Error('the free lease was not taken');
  return taken.lease;
}

describe('lease fences and the statements that change a lease', () => {
  it('a takeover of an expired lease waits for the fenced commit in flight, then takes it with the next epoch', async () => {
    const lease = await heldLease();
    open = commitHeldOpen(lease);
    await open.inside;

    // Expired by then: the other owner may take it, but not between the fence and the commit.
    const takeover = acquireLease(database(), lease.tenantId, 0, 'second-owner', Date.now() + 2 * LEASE_MS, LEASE_MS);
    expect(await settlesWithin(takeover, 300)).toBe(false);

    open.release();
    await expect(open.committed).resolves.toBeUndefined();
    expect((await takeover)?.lease).toEqual({ ...lease, owner: 'second-owner', epoch: lease.epoch + 1 });
  });

  it.runIf(onPostgres)(
    'a lease renewal goes through while a fenced commit of that lease is in flight',
    async () => {
      const lease = await heldLease();
      open = commitHeldOpen(lease);
      await open.inside;

      // Renewed while the commit is still held open (a renewal that waited for it would hang here until the timeout).
      expect(await renewLeases(database(), lease.owner, 1, () => [{ lease, holder: null }], Date.now(), LEASE_MS)).toEqual([]);

      open.release();
      await expect(open.committed).resolves.toBeUndefined();
    },
    15_000,
  );
});
