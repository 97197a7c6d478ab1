import { processOwner } from '../process-owner';
import { runtime } from '../runtime';
import { systemClock, type Clock } from '../clock';
import { badRequest, conflict, isUniqueViolation, notFound } from '../errors';
import { db } from '../storage/db';
import { backoffDelay } from './backoff';
import { GroupCommitter } from './commits';
import { conflictingKeys, normalizeLockKeys } from './locks';
import { DEFAULT_MAX_RETRIES, isProcedureTypeRegistered, procedureType } from './registry';
import {
  claimReady,
  commitStep,
  heartbeat,
  releaseOwned,
  LeaseLostError,
  newProcedureRecord,
  parseError,
  toView,
  transition,
  type NewProcedure,
  type ProcedureRow,
  type StoredError,
} from './store';
import {
  FINISHED_STATES,
  RetryLaterError,
  type ChildProcedure,
  type Json,
  type LockKey,
  type ProcedureContext,
  type ProcedureInstance,
  type ProcedureRunner,
  type ProcedureRunnerOptions,
  type ProcedureStatus,
  type RollbackStatus,
  type ProcedureTypeDefinition,
  type ProcedureView,
  type SubmitOptions,
} from './types';

const DAY_MS = 24 * 60 * 60 * 1000;
const CLEANUP_EVERY_MS = 60 * 60 * 1000;
/** A procedure waiting for a resource looks again at least this often, so it goes on soon after the resource is free. */
const WAIT_RETRY_CAP_MS = 1_000;

/** Bookkeeping of one procedure during one turn (a run of steps until it finishes, waits or is stopped). */
interface Turn {
  row: ProcedureRow;
  definition: ProcedureTypeDefinition;
  instance: ProcedureInstance;
  /** Whether it had child procedures when claimed (only then are their outputs and failures read). */
  hasChildren: boolean;
}

class DurableProcedureRunner implements ProcedureRunner {
  readonly owner: string;
  private readonly clock: Clock;
  private readonly maxConcurrent: number;
  private readonly retentionMs: number;
  private readonly leaseMs: number;
  private readonly pollMs: number;
  private readonly executing = new Map<string, Promise<void>>();
  private readonly commits = new GroupCommitter();
  private readonly watchers = new Map<string, Set<() => void>>();
  private loop: Promise<void> | undefined;
  private stopping = false;
  private dirty = false;
  private wakeLoop: AbortController | undefined;
  private lastCreatedMs = 0;

  constructor(options: ProcedureRunnerOptions = {}) {
    this.clock = options.clock ?? systemClock;
    this.maxConcurrent = options.maxConcurrent ?? 128;
    this.retentionMs = options.retentionMs ?? 7 * DAY_MS;
    this.owner = options.owner ?? processOwner();
    this.leaseMs = options.leaseMs ?? 30_000;
    this.pollMs = options.pollMs ?? 1_000;
  }

  async submit(type: string, state: Json, options: SubmitOptions = {}): Promise<string> {
    const definition = procedureType(type);
    if (!definition) throw badRequest(`Unknown procedure type "${type}"`);
    const instance = definition.create(state);
    const id = options.id ?? `${type}:${crypto.randomUUID()}`;
    const existing = await db().procedure.findUnique({ where: { id } });
    if (existing) return this.existing(existing, type);
    const parent = options.parentId ? await db().procedure.findUnique({ where: { id: options.parentId } }) : null;
    if (options.parentId && !parent) throw notFound(`Parent procedure ${options.parentId}`);
    const record = this.newRecord(instance, { id, type, state }, parent);
    if (parent) await refuseConflictWithAncestors(record, parent);
    try {
      await db().procedure.create({
        data: newProcedureRecord({ ...record, tenantId: options.tenantId ?? record.tenantId, workflowId: options.workflowId ?? record.workflowId }),
      });
    } catch (error) {
      if (!isUniqueViolation(error)) throw error;
      return this.existing((await db().procedure.findUnique({ where: { id } }))!, type);
    }
    this.signal();
    return id;
  }

  async get(id: string): Promise<ProcedureView | null> {
    const row = await db().procedure.findUnique({ where: { id } });
    return row && toView(row);
  }

  async await(id: string, timeoutMs?: number): Promise<ProcedureView> {
    const deadline = timeoutMs === undefined ? Infinity : this.clock.now() + Math.max(0, timeoutMs);
    for (;;) {
      // Watch before reading, so a commit between the read and the sleep still wakes us. Commits of this process wake
      // at once; procedures run by other processes are polled.
      const wake = new AbortController();
      const watchers = this.watchers.get(id) ?? new Set();
      const onChange = () => wake.abort();
      this.watchers.set(id, watchers.add(onChange));
      try {
        const view = await this.get(id);
        if (!view) throw notFound(`Procedure ${id}`);
        if (FINISHED_STATES.includes(view.state) || this.clock.now() >= deadline) return view;
        if (!wake.signal.aborted) await this.clock.sleep(Math.min(this.pollMs, deadline - this.clock.now()), wake.signal);
      } finally {
        watchers.delete(onChange);
        if (watchers.size === 0) this.watchers.delete(id);
      }
    }
  }

  async retry(id: string): Promise<ProcedureView> {
    const row = await db().procedure.findUnique({ where: { id } });
    if (!row) throw notFound(`Procedure ${id}`);
    if (row.state !== 'failed') throw conflict(`Procedure ${id} is ${row.state}; only a failed procedure can be retried`, { state: row.state });
    const now = this.clock.now();
    // A parent that failed because of a child resumes only if that child gets its own retry, so retry failed children too.
    const failedChildren = await db().procedure.findMany({ where: { parentId: id, state: 'failed' }, select: { id: true } });
    const reset = { state: 'running', attempts: 0, error: null, nextRunMs: 0n, owner: null, finishedAt: null, updatedAt: new Date(now) };
    const updated = await db().procedure.updateMany({ where: { id, state: 'failed' }, data: reset });
    if (updated.count !== 1) throw conflict(`Procedure ${id} was retried or changed concurrently`);
    for (const child of failedChildren) await this.retry(child.id);
    this.notify(id);
    this.signal();
    return (await this.get(id))!;
  }

  async start(): Promise<void> {
    if (this.loop) return;
    this.stopping = false;
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.wakeLoop?.abort();
    await this.loop;
    this.loop = undefined;
    await Promise.all(this.executing.values());
    // Every procedure of ours is between two steps now: hand them over at once instead of after the lease. They keep
    // their place in the lock queue (creation order), so nothing conflicting can slip in before they resume.
    await releaseOwned(this.owner, this.clock.now());
  }

  async cleanup(): Promise<number> {
    const cutoff = new Date(this.clock.now() - this.retentionMs);
    let removed = 0;
    for (;;) {
      const batch = await db().procedure.findMany({
        where: { state: { in: [...FINISHED_STATES] }, finishedAt: { lt: cutoff } },
        select: { id: true },
        take: 500,
      });
      if (batch.length === 0) return removed;
      const ids = batch.map((r) => r.id);
      await db().$transaction([
        db().procedureStep.deleteMany({ where: { procedureId: { in: ids } } }),
        db().procedure.deleteMany({ where: { id: { in: ids } } }),
      ]);
      removed += ids.length;
    }
  }

  /** The pump: claim what may run, start it, then sleep until something changes, a backoff is due, or the poll. */
  private async run(): Promise<void> {
    let lastHeartbeat = 0;
    let lastCleanup = 0;
    while (!this.stopping) {
      this.dirty = false;
      const now = this.clock.now();
      let nextDueMs: number | null = null;
      try {
        if (now - lastHeartbeat >= this.leaseMs / 3) {
          await heartbeat(this.owner, now);
          lastHeartbeat = now;
        }
        if (now - lastCleanup >= CLEANUP_EVERY_MS) {
          await this.cleanup();
          lastCleanup = now;
        }
        const free = this.maxConcurrent - this.executing.size;
        if (free > 0) {
          const claim = await claimReady({
            owner: this.owner,
            now,
            leaseMs: this.leaseMs,
            limit: free,
            busy: new Set(this.executing.keys()),
            isRegistered: isProcedureTypeRegistered,
          });
          nextDueMs = claim.nextDueMs;
          for (const row of claim.claimed) this.launch(row, claim.withChildren.has(row.id));
        }
      } catch (error) {
        console.error('[procedures] claim failed; retrying', error);
      }
      const wait = Math.min(this.pollMs, nextDueMs === null ? Infinity : nextDueMs - this.clock.now());
      if (this.dirty || this.stopping || wait <= 0) {
        // Look again at once, but let timers and I/O run first (SQLite calls resolve without ever yielding to them).
        await new Promise((resolve) => setImmediate(resolve));
        continue;
      }
      this.wakeLoop = new AbortController();
      await this.clock.sleep(wait, this.wakeLoop.signal);
    }
  }

  private launch(row: ProcedureRow, hasChildren: boolean): void {
    const turn = this.runTurn(row, hasChildren)
      .catch((error) => {
        if (!(error instanceof LeaseLostError)) console.error(`[procedures] ${row.id} (${row.type}) stopped unexpectedly`, error);
      })
      .finally(() => {
        this.executing.delete(row.id);
        this.notify(row.id);
        if (row.parentId) this.notify(row.parentId);
        this.signal();
      });
    this.executing.set(row.id, turn);
  }

  private async runTurn(row: ProcedureRow, hasChildren: boolean): Promise<void> {
    const definition = procedureType(row.type)!;
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
    const children = turn.hasChildren ? await db().procedure.findMany({ where: { parentId: turn.row.id } }) : [];
    const failedChild = children.find((child) => child.state === 'failed');
    if (failedChild) {
      const cause = parseError(failedChild.error)?.message ?? 'unknown failure';
      return this.prepareRollback(turn, { message: `child procedure ${failedChild.id} (${failedChild.type}) failed: ${cause}` });
    }
    const childOutputs = Object.fromEntries(children.map((child) => [child.id, child.output === null ? null : (JSON.parse(child.output) as Json)]));
    while (!this.stopping) {
      const { row, instance } = turn;
      let status: ProcedureStatus;
      try {
        status = await instance.execute(this.context(row, childOutputs));
      } catch (error) {
        if (error instanceof RetryLaterError && error.waitMs !== undefined) return this.waitOrGiveUp(turn, error, error.waitMs);
        const maxRetries = turn.definition.maxRetries ?? DEFAULT_MAX_RETRIES;
        if (error instanceof RetryLaterError && row.attempts < maxRetries) return this.scheduleRetry(turn, 'retrying', { message: error.message });
        return this.prepareRollback(turn, { message: errorMessage(error) });
      }
      const now = this.clock.now();
      const data = instance.state();
      if (status.kind === 'executing') {
        await this.commit(turn, { state: 'running', data, attempts: 0, error: null }, now);
      } else if (status.kind === 'suspended') {
        let records: NewProcedure[];
        try {
          records = await this.childRecords(row, status.children);
        } catch (error) {
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
      await transition(this.commits, row.id, this.owner, row.step, { state: 'prepare-rollback', error }, this.clock.now());
      Object.assign(row, { state: 'prepare-rollback', error: JSON.stringify(error) });
    }
    if (!definition.supportsRollback || !instance.rollback) return this.fail(row, error);
    await transition(this.commits, row.id, this.owner, row.step, { state: 'rolling-back', attempts: 0 }, this.clock.now());
    Object.assign(row, { state: 'rolling-back', attempts: 0 });
    return this.rollBack(turn);
  }

  private async rollBack(turn: Turn): Promise<void> {
    const stored = parseError(turn.row.error) ?? { message: 'unknown failure' };
    const cause: StoredError = { message: stored.message, attempts: stored.attempts, waitingSinceMs: stored.waitingSinceMs };
    const failedAttempts = cause.attempts ?? 0;
    while (!this.stopping) {
      const { row, instance } = turn;
      let status: RollbackStatus;
      try {
        status = (await instance.rollback!(this.context(row, {}))) ?? { kind: 'rolled-back' as const };
      } catch (error) {
        const failure = { ...cause, rollbackError: errorMessage(error) };
        if (row.attempts < (turn.definition.maxRetries ?? DEFAULT_MAX_RETRIES)) return this.scheduleRetry(turn, 'rolling-back', failure);
        await transition(this.commits, row.id, this.owner, row.step, { state: 'failed', error: failure, attempts: failedAttempts }, this.clock.now());
        return;
      }
      const finished = status.kind === 'rolled-back';
      await this.commit(
        turn,
        { state: finished ? 'failed' : 'rolling-back', data: instance.state(), attempts: finished ? failedAttempts : 0, error: cause },
        this.clock.now(),
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
    await transition(this.commits, turn.row.id, this.owner, turn.row.step, { state, attempts, error, nextRunMs: this.clock.now() + delayMs }, this.clock.now());
  }

  /** A wait for a resource: retried (not counted against maxRetries) until `waitMs` after the wait began, then failed. */
  private async waitOrGiveUp(turn: Turn, error: RetryLaterError, waitMs: number): Promise<void> {
    const now = this.clock.now();
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
    await transition(this.commits, row.id, this.owner, row.step, { state: 'failed', error }, this.clock.now());
  }

  private async commit(turn: Turn, update: Parameters<typeof commitStep>[4], now: number, children: NewProcedure[] = []): Promise<void> {
    await commitStep(this.commits, turn.row.id, this.owner, turn.row.step, update, now, children);
    Object.assign(turn.row, {
      step: turn.row.step + 1,
      state: update.state,
      attempts: update.attempts ?? turn.row.attempts,
      error: update.error ? JSON.stringify(update.error) : null,
    });
    this.notify(turn.row.id);
    if (children.length) this.signal();
  }

  private context(row: ProcedureRow, childOutputs: Record<string, Json>): ProcedureContext {
    return { procedureId: row.id, step: row.step, clock: this.clock, tenantId: row.tenantId, workflowId: row.workflowId, childOutputs, runner: this };
  }

  /** Child rows for a suspension: deterministic ids, refused up front when their keys conflict with an ancestor's. */
  private async childRecords(parent: ProcedureRow, children: ChildProcedure[]): Promise<NewProcedure[]> {
    const records: NewProcedure[] = [];
    for (const [index, child] of children.entries()) {
      const definition = procedureType(child.type);
      if (!definition) throw new Error(`Unknown child procedure type "${child.type}"`);
      const record = this.newRecord(
        definition.create(child.state),
        { id: child.id ?? `${parent.id}:${parent.step + 1}.${index}`, type: child.type, state: child.state },
        parent,
      );
      await refuseConflictWithAncestors(record, parent);
      records.push(record);
    }
    return records;
  }

  private newRecord(instance: ProcedureInstance, what: { id: string; type: string; state: Json }, parent: ProcedureRow | null): NewProcedure {
    let lockKeys: LockKey[];
    try {
      lockKeys = normalizeLockKeys(instance.lockKeys());
    } catch (error) {
      throw badRequest(`Procedure ${what.id}: ${errorMessage(error)}`);
    }
    // Creation times are strictly increasing within a process: they are the lock queue order.
    this.lastCreatedMs = Math.max(this.clock.now(), this.lastCreatedMs + 1);
    return {
      id: what.id,
      type: what.type,
      parentId: parent?.id ?? null,
      tenantId: parent?.tenantId ?? null,
      workflowId: parent?.workflowId ?? null,
      lockKeys,
      data: instance.state(),
      createdAt: new Date(this.lastCreatedMs),
    };
  }

  private existing(row: ProcedureRow, type: string): string {
    if (row.type !== type) throw conflict(`Procedure ${row.id} already exists with type ${row.type}`);
    return row.id;
  }

  private signal(): void {
    this.dirty = true;
    this.wakeLoop?.abort();
  }

  private notify(id: string): void {
    for (const watcher of this.watchers.get(id) ?? []) watcher();
  }
}

/** Refuses a child whose lock keys conflict with its parent's (or any ancestor's): it could never run. */
async function refuseConflictWithAncestors(child: NewProcedure, parent: ProcedureRow): Promise<void> {
  for (
    let ancestor: ProcedureRow | null = parent;
    ancestor;
    ancestor = ancestor.parentId ? await db().procedure.findUnique({ where: { id: ancestor.parentId } }) : null
  ) {
    const keys = conflictingKeys(child.lockKeys, JSON.parse(ancestor.lockKeys) as LockKey[]);
    if (keys.length)
      throw conflict(`Child procedure ${child.id} (${child.type}) conflicts with its ancestor ${ancestor.id} on lock keys: ${keys.join(', ')}`, { keys });
  }
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message || error.name : String(error);
}

export function createProcedureRunner(options: ProcedureRunnerOptions = {}): ProcedureRunner {
  return new DurableProcedureRunner(options);
}

/** The runner of this server process (started by server/boot.ts; procedure types may register before or after). */
export function getProcedureRunner(): ProcedureRunner {
  return (runtime().procedureRunner ??= createProcedureRunner());
}
