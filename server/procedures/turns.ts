import type { Clock } from '../clock';
import type { Database } from '../storage/database';
import { describeStorageError, isTransientStorageError } from '../storage/transient';
import { backoffDelay } from './backoff';
import type { GroupCommitter } from './commits';
import { errorMessage, type ProcedureRecords } from './records';
import { DEFAULT_MAX_RETRIES } from './registry';
import { commitStep, parseError, transition, type NewProcedure, type ProcedureRow, type StoredError } from './store';
import {
  RetryLaterError,
  type ChildProcedure,
  type Json,
  type ProcedureContext,
  type ProcedureInstance,
  type ProcedureRunner,
  type ProcedureStatus,
  type ProcedureTypeDefinition,
  type RollbackStatus,
} from './types';

// What happens to a claimed procedure until it finishes, waits or is stopped: its steps run and commit one by one; a
// retry-later error is retried with backoff (a wait for a resource until its deadline), a transient storage error
// (server/storage/transient.ts) is retried with backoff without counting as an attempt, any other error prepares the
// rollback, which runs if the type has one; every state change is a fenced write of the claiming owner.

/** A procedure waiting for a resource looks again at least this often, so it goes on soon after the resource is free. */
const WAIT_RETRY_CAP_MS = 1_000;
/**
 * How long a run of transient storage errors (connections exhausted, a restart, lock conflicts) is retried before
 * the procedure fails: a database overloaded for minutes must not fail work for good, one down for longer should
 * show up as failures someone can replay.
 */
export const STORAGE_PATIENCE_MS = 15 * 60_000;

/** A stored error during a run of transient storage errors: how many were retried, since when. */
type StorageRetry = StoredError & { storageRetries?: number; storageFailingSinceMs?: number };

/** What a turn needs from the runner that claimed the procedure. */
export interface TurnHost {
  readonly owner: string;
  readonly clock: Clock;
  readonly database: Database;
  readonly commits: GroupCommitter;
  readonly records: ProcedureRecords;
  /** Handed to the procedure in its context (to submit or await other procedures). */
  readonly runner: ProcedureRunner;
  isStopping(): boolean;
  /** A step of procedure `id` committed; `addedChildren`: it created child procedures to claim. */
  stepCommitted(id: string, addedChildren: boolean): void;
}

/** Bookkeeping of one procedure during one turn (a run of steps until it finishes, waits or is stopped). */
interface Turn {
  row: ProcedureRow;
  definition: ProcedureTypeDefinition;
  instance: ProcedureInstance;
  /** Whether it had child procedures when claimed (only then are their outputs and failures read). */
  hasChildren: boolean;
}

export class TurnRunner {
  constructor(private readonly host: TurnHost) {}

  /** Runs the claimed procedure from the state it was claimed in (running, retrying, or part way into a rollback). */
  async run(row: ProcedureRow, hasChildren: boolean): Promise<void> {
    const definition = this.host.runner.types.get(row.type)!;
    let instance: ProcedureInstance;
    try {
      instance = definition.create(JSON.parse(row.data) as Json);
    } catch (error) {
      return this.fail(row, { message: errorMessage(error) });
    }
    const turn: Turn = { row, definition, instance, hasChildren };
    if (row.state === 'prepare-rollback') return this.prepareRollback(turn, parseError(row.error) ?? { message: 'unknown failure' });
    if (row.state === 'rolling-back') return this.rollBack(turn);
    return this.execute(turn);
  }

  private async execute(turn: Turn): Promise<void> {
    const children = turn.hasChildren ? await this.host.database.db.procedure.findMany({ where: { parentId: turn.row.id } }) : [];
    const failedChild = children.find((child) => child.state === 'failed');
    if (failedChild) {
      const cause = parseError(failedChild.error)?.message ?? 'unknown failure';
      return this.prepareRollback(turn, { message: `child procedure ${failedChild.id} (${failedChild.type}) failed: ${cause}` });
    }
    const childOutputs = Object.fromEntries(children.map((child) => [child.id, child.output === null ? null : (JSON.parse(child.output) as Json)]));
    while (!this.host.isStopping()) {
      const { row, instance } = turn;
      let status: ProcedureStatus;
      try {
        status = await instance.execute(this.context(row, childOutputs));
      } catch (error) {
        if (isTransientStorageError(error)) return this.retryStorage(turn, 'retrying', error);
        if (error instanceof RetryLaterError && error.waitMs !== undefined) return this.waitOrGiveUp(turn, error, error.waitMs);
        const maxRetries = turn.definition.maxRetries ?? DEFAULT_MAX_RETRIES;
        if (error instanceof RetryLaterError && row.attempts < maxRetries) return this.scheduleRetry(turn, 'retrying', { message: error.message });
        return this.prepareRollback(turn, { message: describeStorageError(error) });
      }
      const now = this.host.clock.now();
      const data = instance.state();
      if (status.kind === 'executing') {
        await this.commit(turn, { state: 'running', data, attempts: 0, error: null }, now);
      } else if (status.kind === 'suspended') {
        let records: NewProcedure[];
        try {
          records = await this.childRecords(row, status.children);
        } catch (error) {
          if (isTransientStorageError(error)) return this.retryStorage(turn, 'retrying', error);
          return this.prepareRollback(turn, { message: errorMessage(error) });
        }
        await this.commit(turn, { state: 'running', data, attempts: 0, error: null }, now, records);
        return; // claimed again once every child has ended
      } else {
        await this.commit(turn, { state: 'done', data, attempts: 0, error: null, output: status.output ?? null }, now);
        return;
      }
    }
  }

  /** Persists prepare-rollback with the error, then rolls back if the type can, else fails. */
  private async prepareRollback(turn: Turn, cause: StoredError): Promise<void> {
    const { row, definition, instance } = turn;
    // A failed procedure shows how often its failing step was tried; the rollback counts its own retries meanwhile.
    const error: StoredError = { ...cause, attempts: cause.attempts ?? row.attempts };
    if (row.state !== 'prepare-rollback') {
      console.warn(`[procedures] ${row.id} (${row.type}) failed at step ${row.step}: ${error.message}`);
      await this.transition(row, { state: 'prepare-rollback', error });
      Object.assign(row, { state: 'prepare-rollback', error: JSON.stringify(error) });
    }
    if (!definition.supportsRollback || !instance.rollback) return this.fail(row, error);
    await this.transition(row, { state: 'rolling-back', attempts: 0 });
    Object.assign(row, { state: 'rolling-back', attempts: 0 });
    return this.rollBack(turn);
  }

  private async rollBack(turn: Turn): Promise<void> {
    const stored = parseError(turn.row.error) ?? { message: 'unknown failure' };
    const cause: StoredError = { message: stored.message, attempts: stored.attempts, waitingSinceMs: stored.waitingSinceMs };
    const failedAttempts = cause.attempts ?? 0;
    while (!this.host.isStopping()) {
      const { row, instance } = turn;
      let status: RollbackStatus;
      try {
        status = (await instance.rollback!(this.context(row, {}))) ?? { kind: 'rolled-back' as const };
      } catch (error) {
        if (isTransientStorageError(error)) return this.retryStorage(turn, 'rolling-back', error, cause);
        const failure = { ...cause, rollbackError: errorMessage(error) };
        if (row.attempts < (turn.definition.maxRetries ?? DEFAULT_MAX_RETRIES)) return this.scheduleRetry(turn, 'rolling-back', failure);
        await this.transition(row, { state: 'failed', error: failure, attempts: failedAttempts });
        return;
      }
      const finished = status.kind === 'rolled-back';
      await this.commit(
        turn,
        { state: finished ? 'failed' : 'rolling-back', data: instance.state(), attempts: finished ? failedAttempts : 0, error: cause },
        this.host.clock.now(),
      );
      if (finished) return;
    }
  }

  private async scheduleRetry(
    turn: Turn,
    state: 'retrying' | 'rolling-back',
    error: StoredError,
    delayMs = backoffDelay(turn.row.attempts + 1),
  ): Promise<void> {
    const attempts = turn.row.attempts + 1;
    await this.transition(turn.row, { state, attempts, error, nextRunMs: this.host.clock.now() + delayMs });
  }

  /**
   * A transient storage error in a step (or rollback step): tried again after a backoff with jitter, leaving `attempts`
   * (the tries of the work itself, a webhook's requests) alone, until STORAGE_PATIENCE_MS after the first of the run;
   * then the step fails like any error, saying why. The first retry of a run and the giving up are logged.
   */
  private async retryStorage(turn: Turn, state: 'retrying' | 'rolling-back', error: unknown, cause?: StoredError): Promise<void> {
    const { row } = turn;
    const now = this.host.clock.now();
    const previous = parseError(row.error) as StorageRetry | null;
    const since = previous?.storageFailingSinceMs ?? now;
    const retries = previous?.storageRetries ?? 0;
    const why = `storage error: ${describeStorageError(error)}`;
    if (now - since >= STORAGE_PATIENCE_MS) {
      const failure = `${why} (gave up after ${retries} retries over ${Math.round((now - since) / 1000)} s)`;
      console.error(`[procedures] ${row.id} (${row.type}) ${failure}`);
      if (!cause) return this.prepareRollback(turn, { message: failure, waitingSinceMs: previous?.waitingSinceMs });
      return this.transition(row, { state: 'failed', error: { ...cause, rollbackError: failure }, attempts: cause.attempts ?? 0 });
    }
    if (retries === 0) console.warn(`[procedures] ${row.id} (${row.type}) ${why}; retrying with backoff`);
    const storage = { storageRetries: retries + 1, storageFailingSinceMs: since };
    const stored: StorageRetry = cause ? { ...cause, rollbackError: why, ...storage } : { message: why, waitingSinceMs: previous?.waitingSinceMs, ...storage };
    await this.transition(row, { state, attempts: row.attempts, error: stored, nextRunMs: now + backoffDelay(retries + 1) });
  }

  /** A wait for a resource: retried (not counted against maxRetries) until `waitMs` after the wait began, then failed. */
  private async waitOrGiveUp(turn: Turn, error: RetryLaterError, waitMs: number): Promise<void> {
    const now = this.host.clock.now();
    const since = parseError(turn.row.error)?.waitingSinceMs ?? now;
    if (now - since >= waitMs) {
      return this.prepareRollback(turn, {
        message: `${error.message} (gave up after waiting ${Math.round((now - since) / 1000)} s; the limit is ${Math.round(waitMs / 1000)} s)`,
        waitingSinceMs: since,
      });
    }
    await this.scheduleRetry(
      turn,
      'retrying',
      { message: error.message, waitingSinceMs: since },
      Math.min(WAIT_RETRY_CAP_MS, backoffDelay(turn.row.attempts + 1)),
    );
  }

  private async fail(row: ProcedureRow, error: StoredError): Promise<void> {
    await this.transition(row, { state: 'failed', error });
  }

  private async transition(row: ProcedureRow, update: Parameters<typeof transition>[4]): Promise<void> {
    await transition(this.host.commits, row.id, this.host.owner, row.step, update, this.host.clock.now());
  }

  private async commit(turn: Turn, update: Parameters<typeof commitStep>[5], now: number, children: NewProcedure[] = []): Promise<void> {
    await commitStep(this.host.database, this.host.commits, turn.row.id, this.host.owner, turn.row.step, update, now, children);
    Object.assign(turn.row, {
      step: turn.row.step + 1,
      state: update.state,
      attempts: update.attempts ?? turn.row.attempts,
      error: update.error ? JSON.stringify(update.error) : null,
    });
    this.host.stepCommitted(turn.row.id, children.length > 0);
  }

  private context(row: ProcedureRow, childOutputs: Record<string, Json>): ProcedureContext {
    const { clock, runner, database } = this.host;
    return { procedureId: row.id, step: row.step, clock, tenantId: row.tenantId, workflowId: row.workflowId, childOutputs, runner, database };
  }

  /** Child rows for a suspension: deterministic ids, refused up front when their keys conflict with an ancestor's. */
  private async childRecords(parent: ProcedureRow, children: ChildProcedure[]): Promise<NewProcedure[]> {
    const records: NewProcedure[] = [];
    for (const [index, child] of children.entries()) {
      const definition = this.host.runner.types.get(child.type);
      if (!definition) throw new Error(`Unknown child procedure type "${child.type}"`);
      const record = this.host.records.create(
        definition.create(child.state),
        { id: child.id ?? `${parent.id}:${parent.step + 1}.${index}`, type: child.type, state: child.state },
        parent,
      );
      await this.host.records.refuseConflictWithAncestors(record, parent);
      records.push(record);
    }
    return records;
  }
}
