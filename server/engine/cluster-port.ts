// The ports between the engine and a cluster on PostgreSQL, which server/cluster/ plugs into: what the engine needs
// of its membership, what the membership needs of its engine, and what the request thread's engine client needs of
// the cluster channel. The engine names only these, never cluster/ (the layers run cluster → engine,
// test/unit/layers.test.ts); the composition roots (server/engine/thread.ts, server/create-app.ts) build the
// cluster's parts and hand them in.
import type { CommittedShards } from './committed-cache';
import type { SampledInstance } from './counts-history';
import type { PartitionWorker } from './partition';
import type { LeasePolicy } from '../storage/journal/leases';
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

/** What this process's own engine published for an instance: its counts over the partitions it holds. */
export interface LocalFigure {
  counts: Counts;
  held: readonly number[];
  partitions: number;
}

/** The request thread's end of the cluster channel (server/cluster/channel.ts): the counts the other members publish. */
export interface ClusterCounts {
  /**
   * The instance's counts: the engine's own plus the latest figure of every other partition (503 partition_moving
   * while one has none). Null when no member published anything for it: the caller asks its engine.
   */
  counts(tenantId: string, instanceId: string, local: LocalFigure | undefined): Promise<Counts | null>;
  /** Stops listening and leaves the cluster (after the engine handed its partitions back). */
  close(): Promise<void>;
}

/**
 * Joins this process to its cluster from the request thread, which holds the membership (its heartbeat asks
 * `engineResponsive`), and listens for the counts the other members publish (`onCounts` is told of each change).
 */
export type JoinCluster = (onCounts: (instanceId: string, tenantId: string) => void, engineResponsive: () => boolean) => Promise<ClusterCounts>;
