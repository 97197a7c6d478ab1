// This process as a member of a cluster on one PostgreSQL schema (the engine side; see docs/cluster.md
// "How the cluster works inside"). It decides which partitions this engine should hold: it assigns every tenant's partitions
// over the live members (./assignment.ts) again only when its inputs change (a member joins, leaves or dies; a tenant
// is created or deleted; a gather starts or ends), which a cheap poll every few hundred milliseconds and the
// members' signals tell it, plus a slow safety refresh. It hands back what is no longer its own (checkpoint,
// release) and wakes the loops of partitions it should take. A tenant-wide instance operation gathers the tenant's
// partitions on the member running it for the length of the operation (./gather.ts), so it still commits once.
import { LoopIdle, systemClock, type Clock } from '../clock';
import type { ClusterEngine, ClusterMembership } from '../engine/cluster-port';
import type { PartitionWorker } from '../engine/partition';
import { clusterChannel } from '../storage/cluster-session';
import type { PostgresTarget } from '../storage/database-url';
import { assignmentShape, tenantsToAssign } from '../storage/gathers';
import { assignPartitions } from './assignment';
import { CommittedShards } from '../engine/committed-cache';
import { committedCounts, ShardCountsPublisher } from './counts';
import type { SampledInstance } from '../engine/counts-history';
import { Gathers } from './gather';
import { Membership, type ClusterSignal } from './membership';
import type { Database } from '../storage/database';

/**
 * How often the member polls who is live and the shape of the tenants and gathers (a SIGKILLed member tells nobody);
 * the assignment is computed again only when that changed.
 */
const TICK_MS = 250;
/**
 * The tenants are read again at least this often though the poll saw no change (a safety net: one tenant deleted and
 * another created between two polls); the assignment is computed again only when what was read differs.
 */
const FULL_REFRESH_MS = 10_000;

export class ClusterMember implements ClusterMembership {
  readonly membership: Membership;
  /** Publishes the counts of the partitions this member holds, for the others (./counts.ts). */
  readonly counts: ShardCountsPublisher;
  /** Shards of partitions other members hold, rebuilt for reads and kept current (server/engine/committed-cache.ts). */
  readonly committed: CommittedShards;
  private engine: ClusterEngine | undefined;
  /** Desired owner of each partition, by tenant. */
  private owners = new Map<string, string[]>();
  private members: string[] = [];
  /** The poll every TICK_MS of the member's clock, stopped by drain or leave. */
  private ticking: Promise<void> | undefined;
  private stopTicking = new AbortController();
  private readonly tickerIdle: LoopIdle;
  private rebalancing: Promise<void> | undefined;
  private rebalanceAgain = false;
  private draining = false;
  /** Tenants with an events signal in flight; true: more events were appended since it was sent. */
  private readonly eventSignals = new Map<string, boolean>();
  /** The polled shape of the current assignment's inputs (live members, tenant count, gathers), when it was last
   * checked in full, and whether to check it now. */
  private assignedFrom = '';
  private assignedAt = Number.NEGATIVE_INFINITY;
  private assignmentStale = true;
  /** What the current assignment was computed from: the live members and every tenant's partitions and gatherer. */
  private assignedInputs = '';
  /** Each tenant's partitions and gatherer when its owners were computed (reused while those and the members stay). */
  private assignedShapes = new Map<string, string>();
  private readonly gathers: Gathers;
  /** Assignments computed (tests: the assignment is not recomputed while its inputs stay the same). */
  readonly stats = { assignments: 0 };

  constructor(
    /** The storage of the engine it is the membership of: counts are published and shards rebuilt there. */
    private readonly database: Database,
    target: PostgresTarget,
    readonly name: string,
    /** The safety-net reassignment interval (tests counting assignments turn it off). */
    private readonly fullRefreshMs = FULL_REFRESH_MS,
    /** What the poll and the refresh interval wait on. */
    private readonly clock: Clock = systemClock,
  ) {
    this.tickerIdle = new LoopIdle(clock);
    this.membership = new Membership(
      target,
      name,
      (signal) => this.heard(signal),
      () => this.relistened(),
    );
    this.counts = new ShardCountsPublisher(database, clusterChannel(target));
    this.committed = new CommittedShards(database, clock);
    this.gathers = new Gathers(this.membership, () => this.rebalanceSoon(), clock);
  }

  private heard(signal: ClusterSignal): void {
    switch (signal.kind) {
      case 'events':
        if (signal.from !== this.name && this.engine?.hasTenant(signal.tenantId)) this.engine.wakeTenant(signal.tenantId);
        return;
      case 'counts':
      case 'notice':
        return;
      case 'members':
      case 'released':
      case 'gather':
        this.rebalanceSoon();
        return;
      default:
        signal satisfies never;
    }
  }

  /**
   * The channel was down for a while: `events` signals sent meanwhile were missed, and partitions no longer poll the
   * log, so every loaded tenant's partitions read it now; missed membership changes are caught by a rebalance.
   */
  private relistened(): void {
    for (const [tenantId] of this.engine?.loadedTenants() ?? []) this.engine!.wakeTenant(tenantId);
    this.rebalanceSoon();
  }

  /**
   * Events of the tenant were appended on this member: the members holding its other partitions are told at once
   * (one signal in flight per tenant; appends meanwhile send one more after it), instead of finding them at their
   * next poll of the log.
   */
  eventsAppended(tenantId: string): void {
    const owners = this.owners.get(tenantId);
    if (owners?.every((owner) => owner === this.name)) return;
    if (this.eventSignals.has(tenantId)) return void this.eventSignals.set(tenantId, true);
    this.eventSignals.set(tenantId, false);
    this.membership
      .signal({ kind: 'events', from: this.name, tenantId })
      .catch((error: Error) => console.warn('[crowdflow] could not tell the cluster about new events:', error.message))
      .finally(() => {
        const again = this.eventSignals.get(tenantId);
        this.eventSignals.delete(tenantId);
        if (again) this.eventsAppended(tenantId);
      });
  }

  /** Joins and learns the assignment before the engine's loops first try to take partitions. */
  async start(engine: ClusterEngine): Promise<void> {
    this.engine = engine;
    this.draining = false;
    await this.membership.join();
    this.assignmentStale = true;
    await this.refreshIfChanged();
    this.startTicking();
    this.gathers.start();
  }

  private startTicking(): void {
    if (this.ticking) return;
    const stop = (this.stopTicking = new AbortController());
    this.tickerIdle.started();
    this.ticking = (async () => {
      for (;;) {
        await this.tickerIdle.sleep(TICK_MS, stop.signal);
        if (stop.signal.aborted) return;
        this.rebalanceSoon();
      }
    })().finally(() => {
      this.tickerIdle.stopped();
      this.ticking = undefined;
    });
  }

  /** SIGTERM: the others stop counting on this member; the engine then hands every partition back. */
  async drain(): Promise<void> {
    this.draining = true;
    this.stopTicking.abort();
    await this.rebalancing;
    this.owners = new Map();
    this.assignedInputs = '';
    this.assignedShapes = new Map();
    await this.membership.drain();
  }

  async leave(): Promise<void> {
    this.draining = true; // signals heard from now on assign nothing
    this.stopTicking.abort();
    this.gathers.close();
    this.counts.close();
    await this.membership.leave();
  }

  /** The live members that own partitions now (sorted), as last read. */
  liveMembers(): readonly string[] {
    return this.members;
  }

  mayOwn(tenantId: string, partition: number): boolean {
    const owners = this.owners.get(tenantId);
    if (!owners) {
      // A tenant created since the last assignment: assign again now, not at the next change.
      this.assignmentStale = true;
      this.rebalanceSoon();
    }
    return owners?.[partition] === this.name;
  }

  /**
   * The instances whose counts history this member samples: those of tenants whose partition 0 it holds, counted over
   * every partition (its own shards and the figures the other owners published), so one member samples each.
   */
  sampledInstances(): SampledInstance[] {
    return (this.engine?.loadedTenants() ?? []).flatMap(([, workers]) => {
      if (!workers[0]?.lease) return [];
      return [...workers[0].tenant.instances.values()].map((instance) => ({
        id: instance.id,
        tenantId: instance.tenantId,
        counts: () =>
          committedCounts(
            this.database,
            instance,
            workers.flatMap((w) => (w.lease ? [w.partition] : [])),
          ),
      }));
    });
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

  /** Runs one rebalance now and waits for it (tests). */
  async settle(): Promise<void> {
    this.rebalanceSoon();
    while (this.rebalancing) await this.rebalancing;
  }

  /**
   * Polls the live members and the shape of the tenants and gathers; only when they changed since the last check (or
   * it is stale, or the safety refresh is due) are the tenants read, and only when what was read differs from what the
   * assignment was computed from is it computed again, and then only for the tenants whose shape changed unless the
   * members did (at 1,000 tenants a full recompute took the engine thread 150–500 ms every safety refresh). Answers
   * whether the workers should be walked: the assignment changed, or the safety refresh came.
   */
  private async refreshIfChanged(): Promise<boolean> {
    const members = await this.membership.liveMembers();
    const shape = await this.membership.onSession(assignmentShape);
    const polled = JSON.stringify([members, shape]);
    if (this.draining) return false;
    const safetyDue = this.clock.now() - this.assignedAt >= this.fullRefreshMs;
    if (!this.assignmentStale && polled === this.assignedFrom && !safetyDue) return false;
    this.assignmentStale = false;
    const tenants = await this.membership.onSession(tenantsToAssign);
    if (this.draining) return false;
    this.assignedFrom = polled;
    this.assignedAt = this.clock.now();
    const inputs = JSON.stringify([members, tenants]);
    if (inputs === this.assignedInputs) return safetyDue;
    const sameMembers = JSON.stringify(members) === JSON.stringify(this.members);
    const owners = new Map<string, string[]>();
    const shapes = new Map<string, string>();
    for (const tenant of tenants) {
      const tenantShape = `${tenant.partitions}:${tenant.gatheredBy ?? ''}`;
      const kept = sameMembers && this.assignedShapes.get(tenant.id) === tenantShape ? this.owners.get(tenant.id) : undefined;
      owners.set(tenant.id, kept ?? assignPartitions(members, tenant.id, tenant.partitions, tenant.gatheredBy ?? undefined));
      shapes.set(tenant.id, tenantShape);
    }
    this.members = members;
    this.owners = owners;
    this.assignedShapes = shapes;
    this.assignedInputs = inputs;
    this.stats.assignments++;
    return true;
  }

  /**
   * Hands off the partitions no longer this member's and pokes those that became its own, when the assignment was
   * computed again (it changed, or the safety refresh came): a tick that found nothing changed walks no worker (every
   * 250 ms over 8,000 partitions of 1,000 tenants, it was the idle engine thread's work on PostgreSQL).
   */
  private async rebalance(): Promise<void> {
    if (!(await this.refreshIfChanged())) return;
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
    return this.gathers.gather(tenantId, workers, this.engine!.partitionWaitMs);
  }
}
