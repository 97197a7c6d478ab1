// The ports between the engine and a cluster on PostgreSQL, which server/cluster/ plugs into: what the engine needs
// of its membership and what the membership needs of its engine. The engine names only these, never cluster/ (the
// layers run cluster → engine, test/unit/layers.test.ts); the engine thread's root (server/engine/thread.ts) builds
// the member and hands it in.
import type { CommittedShards } from './committed-cache';
import type { SampledInstance } from './counts-history';
import type { PartitionWorker } from './partition';
import type { LeasePolicy } from './store/leases';
import type { Counts } from './types';

/** What the member needs of its engine. */
export interface ClusterEngine {
  readonly partitionWaitMs: number;
  /** Events of the tenant were appended: its partition loops read the log now instead of at their next poll. */
  wakeTenant(tenantId: string): void;
  /** The tenant's partition loops, started (and the tenant loaded) on first use. */
  workers(tenantId: string): Promise<PartitionWorker[]>;
  /** Whether the tenant's loops run in this engine. */
  hasTenant(tenantId: string): boolean;
  /** The tenants whose loops run in this engine, with their loops. */
  loadedTenants(): [string, PartitionWorker[]][];
}

/** The counts of each partition of an instance the engine holds, with its lease epoch; null once the instance stopped. */
export type HeldFigures = () => { partition: number; epoch: number; counts: Counts }[] | null;

/** The engine's membership of a cluster (server/cluster/member.ts): the engine holds only its share of the partitions. */
export interface ClusterMembership extends LeasePolicy {
  /** Shards of partitions other members hold, rebuilt for reads and kept current. */
  readonly committed: CommittedShards;
  /** Publishes the counts of the partitions the engine holds for the other members; `held` is asked when due. */
  readonly counts: { schedule(tenantId: string, instanceId: string, held: HeldFigures): void };
  /** Joins and learns the assignment before the engine's loops first try to take partitions. */
  start(engine: ClusterEngine): Promise<void>;
  /** The others stop counting on this member; the engine then hands every partition back. */
  drain(): Promise<void>;
  leave(): Promise<void>;
  /** Events of the tenant were appended here: the members holding its other partitions are told. */
  eventsAppended(tenantId: string): void;
  /** Brings every partition of the tenant to this member for one instance operation; answers how to let them go. */
  gather(tenantId: string, workers: PartitionWorker[]): Promise<() => Promise<void>>;
  /** The instances whose counts history this member samples. */
  sampledInstances(): SampledInstance[];
}

