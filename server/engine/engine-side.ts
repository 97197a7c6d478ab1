import type { Clock } from '../clock';
import type { CheckpointSchedule } from './checkpoint-schedule';
import type { CommitGroup } from './commit-group';
import type { PartitionWorker } from './partition';
import type { IngestState } from './ingest-state';
import type { InstanceRuntime } from './tenant';
import type { LeasePolicy } from '../storage/journal/leases';
import type { Database } from '../storage/database';

/** What a partition worker needs from its engine. */
export interface EngineSide {
  /** Journey time: event and move times (tests advance it). */
  readonly clock: Clock;
  /**
   * Wall time, for what other processes see: lease times, retries, checkpoint cadence (a test moving journey time by
   * a day must not renew leases 17,280 times).
   */
  readonly wallClock: Clock;
  /** The storage its partitions, log and shards live in. */
  readonly database: Database;
  /** Its app's ingest state, whose recent log hands the loops rows from memory before they read the log table. */
  readonly ingestState: IngestState;
  readonly owner: string;
  readonly leaseMs: number;
  /** A checkpoint is due this long after the first uncheckpointed move when some moves since are of single users. */
  readonly checkpointEveryMs: number;
  /**
   * … and this long after it when every move since is a bulk move (a timer's, an operation's): replaying a few bulk
   * rows costs about what reading a checkpoint does, so writing one a minute after each once-a-minute firing is waste.
   */
  readonly bulkCheckpointEveryMs: number;
  readonly checkpointEveryMoves: number;
  /** Commits checkpoints together with those other partitions write at the same moment. */
  readonly commits: CommitGroup;
  /** Hands each partition its checkpoint when due: one timer for the engine. */
  readonly checkpointSchedule: CheckpointSchedule;
  /** Which partitions this process should hold when several share the database (server/cluster/). */
  readonly leasePolicy?: LeasePolicy;
  /** The worker took (true) or gave up (false) its partition's lease: the lease keeper renews those held. */
  leaseHeld(worker: PartitionWorker, held: boolean): void;
  countsChanged(instanceId: string, tenantId?: string): void;
  /** A timer of the tenant may be due sooner (or later) than planned. */
  timersChanged(tenantId: string): void;
  /** An instance to sample may be new here (a lease taken). */
  instancesChanged(): void;
  requestStop(instance: InstanceRuntime): void;
  isStopRequested(instanceId: string): boolean;
}
