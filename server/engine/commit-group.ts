// The engine's partition commits, grouped. A partition hands its commit (a batch of events applied, or its shards'
// checkpoints) to the engine's CommitGroup; the group commits every commit handed over in the same turn of the event
// loop, and every one handed over while a transaction is with the database, together in the next transaction
// (commitTogetherOrAlone: one journal lock and one COMMIT; alone again if that fails, so a lost lease costs only its
// own batch). Why: a minute's timer firing makes every partition of every tenant it fires due for a checkpoint at
// once (1,000 tenants' 8,000 partitions took 8,000 journal locks and COMMITs a minute one by one); and with several
// members on one PostgreSQL each partition's small batch waited its turn at the journal lock alone (3.2 write
// transactions per 1,000 events through 3 members against 1.2 through one). Each caller holds its partition lock
// until its commit settles, so a partition has at most one commit in the group.
import type { Database } from '../storage/database';
import { commitBatch, commitTogetherOrAlone, type BatchCommit, type CheckpointWrite, type TenantCommit } from '../storage/journal/commit';
import type { Lease } from '../storage/journal/leases';

/** Partition commits in one transaction at most: bounds its statements and how long its locks are held. */
const PARTITIONS_PER_COMMIT = 256;
/**
 * Transactions with the database at once. One at a time made PostgreSQL's events end to end ~5% slower than a
 * transaction per partition (the next one's fences and offsets no longer overlapped the journal lock holder's work);
 * two keep that overlap and still group what arrives meanwhile.
 */
const IN_FLIGHT = 2;

interface Pending {
  commit: TenantCommit;
  settle: (error?: unknown) => void;
}

export class CommitGroup {
  private readonly pending: Pending[] = [];
  private inFlight = 0;
  private scheduled = false;

  constructor(private readonly database: Database) {}

  /** Commits the batch with those handed over meanwhile; rejects as commitBatch does (LeaseLostError for a lost lease). */
  commit(tenantId: string, commit: BatchCommit): Promise<void> {
    // A Prisma transaction callback cannot join a transaction of raw statements.
    if (commit.also) return commitBatch(this.database, tenantId, commit);
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ commit: { tenantId, commit }, settle: (error) => (error === undefined ? resolve() : reject(error)) });
      this.schedule();
    });
  }

  /** Commits the partition's checkpoints, fenced by its lease. */
  checkpoint(lease: Lease, checkpoints: CheckpointWrite[], now: number): Promise<void> {
    return this.commit(lease.tenantId, { leases: [lease], moves: [], checkpoints, now });
  }

  /** The next transaction, after this turn of the event loop (what the turn hands over joins it), if one may start. */
  private schedule(): void {
    if (this.scheduled || this.inFlight >= IN_FLIGHT || this.pending.length === 0) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.flush();
    });
  }

  private async flush(): Promise<void> {
    const group = this.pending.splice(0, PARTITIONS_PER_COMMIT);
    if (group.length === 0) return;
    this.inFlight++;
    try {
      const outcomes = await commitTogetherOrAlone(
        this.database,
        group.map(({ commit }) => commit),
      );
      for (const [i, { settle }] of group.entries()) settle(outcomes[i] ? (outcomes[i].error ?? new Error('partition commit not committed')) : undefined);
    } catch (error) {
      for (const { settle } of group) settle(error);
    } finally {
      this.inFlight--;
      this.schedule();
    }
  }
}
