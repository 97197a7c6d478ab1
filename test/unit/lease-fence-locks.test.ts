// A commit's lease fence holds the lease row against a change of owner until it commits, and (PostgreSQL) against
// nothing else: a takeover waits for the commit, a lease renewal does not. Renewals used to queue behind the timer
// firings' fences and the next firings' fences behind the renewal (issue 33: 1,000 tenants' minute firing).
import { afterEach, describe, expect, it } from 'vitest';
import { commitBatch } from '../../server/storage/journal/commit';
import { acquireLease, renewLeases, type Lease } from '../../server/storage/journal/leases';
import { newId } from '../../server/ids';
import { db, database } from '../helpers/app-db';
import { waitFor } from '../helpers/wait-for';

const onPostgres = process.env.CROWDFLOW_TEST_PROVIDER === 'postgres';
const LEASE_MS = 15_000;

/**
 * A commit fenced by `lease` that stays open (its fence already run) until `release` is called. `inside` resolves
 * with the PostgreSQL backend running it (null on SQLite, whose one connection serializes every statement anyway).
 */
function commitHeldOpen(lease: Lease) {
  let release!: () => void;
  let fenced!: (backend: number | null) => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const inside = new Promise<number | null>((resolve) => (fenced = resolve));
  const committed = commitBatch(database(), lease.tenantId, {
    leases: [lease],
    moves: [],
    now: Date.now(),
    also: async (tx) => {
      fenced(onPostgres ? (await tx.$queryRawUnsafe<Array<{ pid: number }>>('SELECT pg_backend_pid() AS pid'))[0].pid : null);
      await gate;
    },
  });
  return { inside, release, committed };
}

/** The backends waiting for a lock `backend` holds (PostgreSQL's own account of who blocks whom). */
async function blockedBy(backend: number): Promise<number> {
  const rows = await (await database().raw()).query<{ waiting: unknown }>(
    'SELECT count(*)::int AS "waiting" FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid))',
    [backend],
  );
  return Number(rows[0].waiting);
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
    const backend = await open.inside;

    // Expired by then: the other owner may take it, but not between the fence and the commit.
    const settled: string[] = [];
    const takeover = acquireLease(database(), lease.tenantId, 0, 'second-owner', Date.now() + 2 * LEASE_MS, LEASE_MS);
    void takeover.then(
      () => settled.push('takeover'),
      () => settled.push('takeover'),
    );
    if (backend !== null)
      await waitFor(
        'the takeover to wait for the fenced commit',
        () => blockedBy(backend),
        (waiting) => waiting > 0,
      );

    // Still waiting while the fenced commit is open. Once released, which of the two answers reaches this process
    // first is the database's and the scheduler's race (the commit's backend frees the row, then replies), so the order
    // is shown here and by the outcome: the fenced commit went through under the old epoch, the takeover got the next.
    expect(settled).toEqual([]);
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
