// Checkpoints of many partitions commit together. A minute's timer firing moves users in every partition of every
// tenant it fires, and each of those partitions is due for a checkpoint the same checkpoint interval later: written
// one transaction each, 1,000 tenants' 8,000 partitions took 8,000 journal locks and COMMITs a minute. Partitions
// hand their checkpoints to the engine's writer, which commits all those handed over in the same turn of the event
// loop as a few transactions (commitTogetherOrAlone). Each caller holds its partition lock until its commit settles.
import type { Database } from '../storage/database';
import { commitTogetherOrAlone, type CheckpointWrite, type TenantCommit } from './store/commit';
import type { Lease } from './store/leases';

/** Partitions whose checkpoints share one transaction. */
const PARTITIONS_PER_COMMIT = 256;

interface Pending {
  commit: TenantCommit;
  settle: (error?: unknown) => void;
}

export class CheckpointWriter {
  private pending: Pending[] = [];

  constructor(private readonly database: Database) {}

  /** Commits the partition's checkpoints, fenced by its lease, with those of every partition handed over meanwhile. */
  write(lease: Lease, checkpoints: CheckpointWrite[], now: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (this.pending.length === 0) setImmediate(() => void this.flush());
      this.pending.push({
        commit: { tenantId: lease.tenantId, commit: { leases: [lease], moves: [], checkpoints, now } },
        settle: (error) => (error === undefined ? resolve() : reject(error)),
      });
    });
  }

  private async flush(): Promise<void> {
    const handed = this.pending;
    this.pending = [];
    for (let at = 0; at < handed.length; at += PARTITIONS_PER_COMMIT) {
      const group = handed.slice(at, at + PARTITIONS_PER_COMMIT);
      try {
        const outcomes = await commitTogetherOrAlone(
          this.database,
          group.map(({ commit }) => commit),
        );
        for (const [i, { settle }] of group.entries()) settle(outcomes[i] ? (outcomes[i].error ?? new Error('checkpoint not committed')) : undefined);
      } catch (error) {
        for (const { settle } of group) settle(error);
      }
    }
  }
}
