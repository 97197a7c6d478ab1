// The engine's CommitGroup: partition commits handed over together share one transaction, and one that fails (a lost
// lease) fails alone while the others commit.
import { describe, expect, it } from 'vitest';
import { CommitGroup } from '../../server/engine/commit-group';
import { acquireLease, LeaseLostError, type Lease } from '../../server/storage/journal/leases';
import { newId } from '../../server/ids';
import type { Database } from '../../server/storage/database';
import { db, database } from '../helpers/app-db';
import type { RawDb } from '../../server/storage/raw';

const LEASE_MS = 15_000;

/** The test's database, with the raw driver's transactions counted (the driver itself is the real one). */
function counted(): { database: Database; transactions: () => number } {
  const real = database();
  let transactions = 0;
  const raw = async (): Promise<RawDb> => {
    const driver = await real.raw();
    return new Proxy(driver, {
      get(target, key) {
        if (key === 'transaction') return (...args: Parameters<RawDb['transaction']>) => (transactions++, target.transaction(...args));
        const value = Reflect.get(target, key);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  };
  return { database: { ...real, raw }, transactions: () => transactions };
}

async function tenantWithLeases(partitions: number): Promise<{ tenantId: string; leases: Lease[] }> {
  const tenantId = newId('tn');
  await db().tenant.create({ data: { id: tenantId, name: tenantId.toLowerCase(), partitions } });
  const leases: Lease[] = [];
  for (let partition = 0; partition < partitions; partition++) {
    const taken = await acquireLease(database(), tenantId, partition, 'owner', Date.now(), LEASE_MS);
    if (!taken) throw new Error(`partition ${partition} was not taken`);
    leases.push(taken.lease);
  }
  return { tenantId, leases };
}

async function offsets(tenantId: string): Promise<number[]> {
  const rows = await db().partitionState.findMany({ where: { tenantId }, orderBy: { partition: 'asc' } });
  return rows.map((row) => Number(row.offset));
}

describe('the engine commit group', () => {
  it('commits the batches of partitions handed over in one turn in one transaction', async () => {
    const { tenantId, leases } = await tenantWithLeases(3);
    const { database: watched, transactions } = counted();
    const group = new CommitGroup(watched);
    const now = Date.now();
    await Promise.all(leases.map((lease) => group.commit(tenantId, { leases: [lease], offsets: { from: 0, to: 5 + lease.partition }, moves: [], now })));
    expect(transactions()).toBe(1);
    expect(await offsets(tenantId)).toEqual([5, 6, 7]);
  });

  it('fails only the batch whose lease was lost; the others commit', async () => {
    const { tenantId, leases } = await tenantWithLeases(3);
    // Another owner takes partition 1 once its lease expired: the first owner's lease of it is stale.
    const takeover = await acquireLease(database(), tenantId, 1, 'other-owner', Date.now() + 2 * LEASE_MS, LEASE_MS);
    expect(takeover).not.toBeNull();
    const group = new CommitGroup(counted().database);
    const now = Date.now();
    const settled = await Promise.allSettled(leases.map((lease) => group.commit(tenantId, { leases: [lease], offsets: { from: 0, to: 9 }, moves: [], now })));
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((settled[1] as PromiseRejectedResult).reason).toBeInstanceOf(LeaseLostError);
    expect(await offsets(tenantId)).toEqual([9, 0, 9]);
  });
});
