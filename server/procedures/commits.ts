// The runner's step commits and state changes, written together: every write waiting when a transaction starts joins
// it (group commit), so N procedures stepping at once cost one transaction (one fsync on SQLite, one round trip on
// PostgreSQL) instead of N, and each write is fenced by its owner and step (server/storage/procedure-writes.ts).
// Measured by `npm run bench -- --only=procedures` (BENCHMARKS.md).
import type { Database } from '../storage/database';
import { commitProcedureWrites, type ProcedureUpdate } from '../storage/procedure-writes';
import { FINISHED_STATES, type Json, type ProcedureState } from './types';

/** Writes per transaction at most: keeps one transaction (and the statement list) bounded under a burst. */
const MAX_WRITES_PER_TRANSACTION = 500;

export interface FencedUpdate extends ProcedureUpdate {
  state: ProcedureState;
  data?: Json;
  output?: Json;
}

/** One fenced write: a state change, and with `nextStep` the step it commits. */
export interface FencedWrite {
  id: string;
  owner: string;
  step: number;
  update: FencedUpdate;
  now: number;
  nextStep: boolean;
}

interface PendingWrite {
  write: FencedWrite;
  resolve(matched: boolean): void;
  reject(error: unknown): void;
}

export class GroupCommitter {
  private readonly queue: PendingWrite[] = [];
  private draining = false;

  constructor(private readonly database: Database) {}

  /** Commits the write with the others waiting; resolves with whether its fence matched (false: the lease is lost). */
  write(write: FencedWrite): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.queue.push({ write, resolve, reject });
      if (!this.draining) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.draining = true;
    try {
      // Let the writes of this turn of the event loop join the first transaction.
      await new Promise((resolve) => setImmediate(resolve));
      while (this.queue.length > 0) await this.commit(this.queue.splice(0, MAX_WRITES_PER_TRANSACTION));
    } finally {
      this.draining = false;
    }
  }

  private async commit(batch: PendingWrite[]): Promise<void> {
    try {
      const writes = batch.map(({ write }) => ({ ...write, finished: FINISHED_STATES.includes(write.update.state) }));
      const matched = await commitProcedureWrites(this.database, writes);
      batch.forEach((pending, i) => pending.resolve(matched[i]));
    } catch (error) {
      if (batch.length === 1) return batch[0].reject(error);
      // One bad write must not fail the others: commit each on its own to find it.
      for (const write of batch) await this.commit([write]);
    }
  }
}
