// This process as a member of a cluster on one PostgreSQL schema (the engine side; see docs/ARCHITECTURE.md
// "Running as a cluster"). It decides which partitions this engine should hold: every few hundred milliseconds, and at
// once when a member joins, leaves or hands a partition back, it reads the live members and the tenants, assigns
// every tenant's partitions over the members (./assignment.ts), hands back what is no longer its own (checkpoint,
// release) and wakes the loops of partitions it should take. A tenant-wide instance operation gathers the tenant's
// partitions on the member running it for the length of the operation (ClusterGather), so it still commits once.
import type { PartitionWorker } from '../engine/partition';
import type { LeasePolicy } from '../engine/store/leases';
import { RetryLaterError } from '../procedures/types';
import type { DatabaseTarget } from '../storage/database-url';
import { assignPartitions } from './assignment';
import { ShardCountsPublisher } from './counts';
import { clusterChannel, DB_NOW_MS, Membership } from './membership';

/** What the member needs of its engine. */
export interface ClusterEngine {
  readonly partitionWaitMs: number;
  /** The tenant's partition loops, started (and the tenant loaded) on first use. */
  workers(tenantId: string): Promise<PartitionWorker[]>;
  /** The tenants whose loops run in this engine, with their loops. */
  loadedTenants(): [string, PartitionWorker[]][];
}

/** How often the member re-reads members and tenants without being told (a SIGKILLed member tells nobody). */
const TICK_MS = 250;
/** A gather outlives a member that dies holding it only until then (a dead member's gather is ignored at once). */
const GATHER_HOLD_MS = 5 * 60_000;
/** How long an operation waits for the tenant's partitions to arrive before it is retried by its procedure. */
const GATHER_WAIT_MS = 15_000;
const GATHER_POLL_MS = 20;

export class ClusterMember implements LeasePolicy {
  readonly membership: Membership;
  /** Publishes the counts of the partitions this member holds, for the others (./counts.ts). */
  readonly counts: ShardCountsPublisher;
  private engine: ClusterEngine | undefined;
  /** Desired owner of each partition, by tenant. */
  private owners = new Map<string, string[]>();
  private members: string[] = [];
  private ticker: ReturnType<typeof setInterval> | undefined;
  private rebalancing: Promise<void> | undefined;
  private rebalanceAgain = false;
  private draining = false;
  private readonly schema: string;

  constructor(
    target: Extract<DatabaseTarget, { provider: 'postgres' }>,
    readonly name: string,
  ) {
    this.schema = `"${target.schema.replace(/"/g, '""')}"`;
    this.membership = new Membership(target, name, (signal) => {
      if (signal.kind !== 'counts' && signal.kind !== 'notice') this.rebalanceSoon();
    });
    this.counts = new ShardCountsPublisher(clusterChannel(target));
  }

  /** Joins and learns the assignment before the engine's loops first try to take partitions. */
  async start(engine: ClusterEngine): Promise<void> {
    this.engine = engine;
    this.draining = false;
    await this.membership.join();
    await this.refresh();
    this.ticker = setInterval(() => this.rebalanceSoon(), TICK_MS);
    this.ticker.unref();
  }

  /** SIGTERM: the others stop counting on this member; the engine then hands every partition back. */
  async drain(): Promise<void> {
    this.draining = true;
    clearInterval(this.ticker);
    await this.rebalancing;
    this.owners = new Map();
    await this.membership.drain();
  }

  async leave(): Promise<void> {
    clearInterval(this.ticker);
    this.counts.close();
    await this.membership.leave();
  }

  /** The live members that own partitions now (sorted), as last read. */
  liveMembers(): readonly string[] {
    return this.members;
  }

  mayOwn(tenantId: string, partition: number): boolean {
    const owners = this.owners.get(tenantId);
    if (!owners) this.rebalanceSoon(); // a tenant created since the last read: read again now, not at the next tick
    return owners?.[partition] === this.name;
  }

  isGone(owner: string): Promise<boolean> {
    return this.membership.isGone(owner);
  }

  private rebalanceSoon(): void {
    if (this.draining) return;
    if (this.rebalancing) {
      this.rebalanceAgain = true;
      return;
    }
    this.rebalancing = this.rebalance()
      .catch((error: Error) => console.warn('[crowdflow] cluster rebalance failed:', error.message))
      .finally(() => {
        this.rebalancing = undefined;
        if (!this.rebalanceAgain) return;
        this.rebalanceAgain = false;
        this.rebalanceSoon();
      });
  }

  /** Reads the live members, the tenants and their gathers, and assigns every tenant's partitions. */
  private async refresh(): Promise<void> {
    const members = await this.membership.liveMembers();
    const tenants = await this.membership.query<{ id: string; partitions: number; gatheredBy: string | null }>(
      `SELECT t."id", t."partitions", g."member" AS "gatheredBy" FROM ${this.schema}."Tenant" t
        LEFT JOIN ${this.schema}."ClusterGather" g ON g."tenantId" = t."id" AND g."untilMs" > ${DB_NOW_MS}`,
    );
    if (this.draining) return;
    this.members = members;
    this.owners = new Map(tenants.map((t) => [t.id, assignPartitions(members, t.id, t.partitions, t.gatheredBy ?? undefined)]));
  }

  private async rebalance(): Promise<void> {
    await this.refresh();
    const engine = this.engine!;
    const loaded = new Map(engine.loadedTenants());
    for (const [tenantId, owners] of this.owners) {
      // A tenant created on another member: load it here too when some of its partitions are this member's.
      if (!loaded.has(tenantId) && owners.includes(this.name)) engine.workers(tenantId).catch(() => undefined);
    }
    const handoffs: Promise<void>[] = [];
    for (const [tenantId, workers] of loaded) {
      const owners = this.owners.get(tenantId);
      if (!owners) continue; // deleted: the engine forgets it
      for (const worker of workers) {
        const mine = owners[worker.partition] === this.name;
        if (worker.lease && !mine)
          handoffs.push(worker.handOff().catch((error: Error) => console.warn(`[crowdflow] handoff of partition ${worker.partition} failed:`, error.message)));
        else if (!worker.lease && mine) worker.poke();
      }
    }
    if (handoffs.length === 0) return;
    await Promise.all(handoffs);
    await this.membership.signal({ kind: 'released', from: this.name });
  }

  /**
   * Brings every partition of the tenant to this member for one instance operation and returns how to let them go
   * again. Another live member's gather of the same tenant makes the operation wait (retried by its procedure).
   */
  async gather(tenantId: string, workers: PartitionWorker[]): Promise<() => Promise<void>> {
    const engine = this.engine!;
    const [held] = await this.membership.query<{ member: string; current: boolean }>(
      `SELECT "member", "untilMs" > ${DB_NOW_MS} AS "current" FROM ${this.schema}."ClusterGather" WHERE "tenantId" = $1`,
      [tenantId],
    );
    const busy = () =>
      new RetryLaterError(`the partitions of tenant ${tenantId} are gathered by ${held?.member ?? 'another member'} for another instance operation`, {
        waitMs: engine.partitionWaitMs,
      });
    if (held && held.member !== this.name && held.current && !(await this.isGone(held.member))) throw busy();
    // Compare-and-set on the row just read: two members claiming at once, one wins.
    const claimed = await this.membership.query(
      `INSERT INTO ${this.schema}."ClusterGather" ("tenantId", "member", "untilMs") VALUES ($1, $2, ${DB_NOW_MS} + ${GATHER_HOLD_MS})
       ON CONFLICT ("tenantId") DO UPDATE SET "member" = excluded."member", "untilMs" = excluded."untilMs"
        WHERE ${this.schema}."ClusterGather"."member" = $3 RETURNING 1 AS "claimed"`,
      [tenantId, this.name, held?.member ?? this.name],
    );
    if (claimed.length === 0) throw busy();
    const release = async () => {
      await this.membership.query(`DELETE FROM ${this.schema}."ClusterGather" WHERE "tenantId" = $1 AND "member" = $2`, [tenantId, this.name]);
      await this.membership.signal({ kind: 'gather', from: this.name, tenantId });
      this.rebalanceSoon();
    };
    await this.membership.signal({ kind: 'gather', from: this.name, tenantId });
    this.rebalanceSoon();
    const deadline = Date.now() + GATHER_WAIT_MS;
    while (workers.some((w) => !w.lease) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, GATHER_POLL_MS));
    return release;
  }
}
