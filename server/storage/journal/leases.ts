// Partition leases (PartitionState.owner/epoch/leaseUntilMs): one owner process per partition, with expiry and
// takeover; every take bumps the fencing epoch that each batch commit checks (./commit.ts).
import { isDeadLocalOwner } from '../../process-owner';
import { num } from './row-number';
import type { Database } from '../database';

export interface Lease {
  tenantId: string;
  partition: number;
  owner: string;
  epoch: number;
}

/**
 * Who may hold which partition when several processes share the database (server/cluster/member.ts); without one
 * (SQLite, tests' engines) a process takes every partition it finds free, as before.
 */
export interface LeasePolicy {
  /** Whether this process should hold the partition now (its share of the live members' partitions). */
  mayOwn(tenantId: string, partition: number): boolean;
  /** Whether the holder of a lease is gone (no live member of that name): its lease can be taken before it expires. */
  isGone(owner: string): Promise<boolean>;
}

/** The partition's lease was taken over (or expired and was taken): this process must stop writing for it. */
export class LeaseLostError extends Error {
  constructor(lease: Lease) {
    super(`Lease of partition ${lease.partition} of tenant ${lease.tenantId} (epoch ${lease.epoch}) is no longer held by ${lease.owner}`);
    this.name = 'LeaseLostError';
  }
}

/**
 * Takes the partition's lease when it is free, expired, already ours (a restart under the same owner name) or held by
 * a process of this host that is gone (or, with a policy, a member that is gone), bumping the fencing epoch. Returns
 * the lease and the applied offset, or null when another owner holds it.
 */
export async function acquireLease(
  database: Database,
  tenantId: string,
  partition: number,
  owner: string,
  now: number,
  leaseMs: number,
  policy?: LeasePolicy,
): Promise<{ lease: Lease; offset: number } | null> {
  const rawDb = await database.raw();
  const t = database.dialect.table('PartitionState');
  const insert = database.dialect.parameters();
  await rawDb.execute(
    `INSERT INTO ${t} ("tenantId", "partition", "offset", "epoch", "leaseUntilMs") VALUES (${insert.bind(tenantId)}, ${insert.bind(partition)}, 0, 0, 0) ON CONFLICT DO NOTHING`,
    insert.params,
  );
  const read = database.dialect.parameters();
  const [state] = await rawDb.query<{ owner: string | null; epoch: unknown; offset: unknown; leaseUntilMs: unknown }>(
    `SELECT "owner", "epoch", "offset", "leaseUntilMs" FROM ${t} WHERE "tenantId" = ${read.bind(tenantId)} AND "partition" = ${read.bind(partition)}`,
    read.params,
  );
  const free = state.owner === null || state.owner === owner || num(state.leaseUntilMs) < now || isDeadLocalOwner(state.owner);
  if (!free && !(policy && (await policy.isGone(state.owner!)))) return null;
  // Taken only if nobody else took it since the read (same epoch), and only once the previous owner's commits in
  // flight are done: their fences hold the row against a takeover (commit.ts).
  const epoch = num(state.epoch);
  const update = database.dialect.parameters();
  const taken = await rawDb.execute(
    `UPDATE ${t} SET "owner" = ${update.bind(owner)}, "epoch" = ${update.bind(epoch + 1)}, "leaseUntilMs" = ${update.bind(now + leaseMs)}
     WHERE ${heldAgainstCommits(database, update.bind, tenantId, partition)} AND "epoch" = ${update.bind(epoch)}`,
    update.params,
  );
  if (taken !== 1) return null;
  return { lease: { tenantId, partition, owner, epoch: epoch + 1 }, offset: num(state.offset) };
}

/** Extends a held lease; false when it was lost. */
export async function renewLease(database: Database, lease: Lease, now: number, leaseMs: number): Promise<boolean> {
  const { params, bind } = database.dialect.parameters();
  const renewed = await (await database.raw()).execute(
    `UPDATE ${database.dialect.table('PartitionState')} SET "leaseUntilMs" = ${bind(now + leaseMs)}
      WHERE "tenantId" = ${bind(lease.tenantId)} AND "partition" = ${bind(lease.partition)} AND "owner" = ${bind(lease.owner)} AND "epoch" = ${bind(lease.epoch)}`,
    params,
  );
  return renewed === 1;
}

export async function releaseLease(database: Database, lease: Lease): Promise<void> {
  const { params, bind } = database.dialect.parameters();
  await (await database.raw()).execute(
    `UPDATE ${database.dialect.table('PartitionState')} SET "owner" = NULL, "leaseUntilMs" = 0
      WHERE ${heldAgainstCommits(database, bind, lease.tenantId, lease.partition)} AND "owner" = ${bind(lease.owner)} AND "epoch" = ${bind(lease.epoch)}`,
    params,
  );
}

/**
 * The WHERE of a statement that changes a partition's owner: the row, locked for update first. A commit's fence
 * key-share-locks its lease rows (so a lease renewal, a plain UPDATE, never waits for a commit or holds one up), and
 * a plain UPDATE would not wait for those locks: this does, so an owner never changes between a fence and its commit.
 */
function heldAgainstCommits(database: Database, bind: (value: unknown) => string, tenantId: string, partition: number): string {
  // Placeholders are bound in text order (SQLite's `?` are positional): the row's key, then the locked row's.
  const key = `"tenantId" = ${bind(tenantId)} AND "partition" = ${bind(partition)}`;
  const t = database.dialect.table('PartitionState');
  const row = `SELECT 1 FROM ${t} AS l WHERE l."tenantId" = ${bind(tenantId)} AND l."partition" = ${bind(partition)}`;
  return `${key} AND EXISTS (${database.dialect.lockedForTakeover(row)})`;
}

/** Leases renewed in one statement (3 parameters each, well under either database's limit). */
const LEASES_PER_RENEWAL = 400;

/**
 * Extends every lease held by `owner`, who holds `count` of them, in one statement (not one per partition: 8,000
 * partitions of 1,000 idle tenants renewing one by one were 1,600 writes a second). Returns the leases that were not
 * renewed: lost. `held` lists the leases with what holds them; it is asked for only when a lease may be lost.
 */
export async function renewLeases<T>(
  database: Database,
  owner: string,
  count: number,
  held: () => { lease: Lease; holder: T }[],
  now: number,
  leaseMs: number,
): Promise<{ lease: Lease; holder: T }[]> {
  // Every row of the owner at once, with no list to bind: when it renews as many rows as the owner holds leases, none
  // was lost (owner names are unique to a process). Only a shortfall is looked at lease by lease.
  const { params, bind } = database.dialect.parameters();
  const renewed = await (await database.raw()).execute(
    `UPDATE ${database.dialect.table('PartitionState')} SET "leaseUntilMs" = ${bind(now + leaseMs)} WHERE "owner" = ${bind(owner)}`,
    params,
  );
  if (renewed === count) return [];
  const leases = held();
  const lost = new Set(
    await renewEach(
      database,
      owner,
      leases.map(({ lease }) => lease),
      now,
      leaseMs,
    ),
  );
  return leases.filter(({ lease }) => lost.has(lease));
}

/** Renews each lease by its epoch; returns those that were not renewed: lost. */
async function renewEach(database: Database, owner: string, leases: Lease[], now: number, leaseMs: number): Promise<Lease[]> {
  const rawDb = await database.raw();
  const t = database.dialect.table('PartitionState');
  const lost: Lease[] = [];
  for (let from = 0; from < leases.length; from += LEASES_PER_RENEWAL) {
    const chunk = leases.slice(from, from + LEASES_PER_RENEWAL);
    const { params, bind } = database.dialect.parameters();
    // Placeholders are bound in text order (SQLite's `?` are positional).
    const until = bind(now + leaseMs);
    const ownedBy = bind(owner);
    const held = chunk.map((lease) => `(${bind(lease.tenantId)}, CAST(${bind(lease.partition)} AS INTEGER), CAST(${bind(lease.epoch)} AS INTEGER))`);
    // A row-value IN list: SQLite evaluated a correlated EXISTS over a UNION ALL of the leases row by row (8,000 leases
    // of 1,000 tenants: 514 ms a renewal, this 41 ms, measured on an in-memory table; the bench's profile showed it).
    const renewed = await rawDb.query<{ tenantId: string; partition: unknown }>(
      `UPDATE ${t} SET "leaseUntilMs" = ${until}
        WHERE "owner" = ${ownedBy} AND ("tenantId", "partition", "epoch") IN (VALUES ${held.join(', ')})
        RETURNING "tenantId", "partition"`,
      params,
    );
    const kept = new Set(renewed.map((row) => `${row.tenantId}\u0000${num(row.partition)}`));
    for (const lease of chunk) if (!kept.has(`${lease.tenantId}\u0000${lease.partition}`)) lost.push(lease);
  }
  return lost;
}
