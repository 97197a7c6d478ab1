import { processOwner } from '../process-owner';
import { LoopIdle, systemClock, type Clock } from '../clock';
import { badRequest, conflict, isUniqueViolation, notFound } from '../errors';
import type { Database } from '../storage/database';
import { describeStorageError, isTransientStorageError } from '../storage/transient';
import { deleteProcedures, insertProcedure } from '../storage/procedure-rows';
import { backoffDelay } from './backoff';
import { GroupCommitter } from './commits';
import { ProcedureRecords } from './records';
import { ProcedureTypes } from './registry';
import { claimReady, heartbeat, releaseOwned, LeaseLostError, newProcedureRecord, toView, type ProcedureRow } from './store';
import { TurnRunner } from './turns';
import { FINISHED_STATES, type Json, type ProcedureRunner, type ProcedureRunnerOptions, type ProcedureView, type SubmitOptions } from './types';

// The runner's own part: submitting, awaiting and retrying procedures, and the pump that claims what may run (leases
// renewed by a heartbeat, handed back on stop) and hands each claimed procedure to a turn (server/procedures/turns.ts:
// steps, retries, rollback).

const DAY_MS = 24 * 60 * 60 * 1000;
const CLEANUP_EVERY_MS = 60 * 60 * 1000;
/** An idle pump's poll grows to this many times `pollMs` (1 s → 8 s): a count query a second was idle servers' work. */
const IDLE_POLL_FACTOR = 8;

class DurableProcedureRunner implements ProcedureRunner {
  readonly owner: string;
  readonly types: ProcedureTypes;
  private readonly clock: Clock;
  private readonly maxConcurrent: number;
  private readonly retentionMs: number;
  private readonly leaseMs: number;
  private readonly pollMs: number;
  private readonly idlePollMs: number;
  private readonly onSubmitted: (() => void) | undefined;
  private readonly executing = new Map<string, Promise<void>>();
  private readonly records: ProcedureRecords;
  private readonly turns: TurnRunner;
  private readonly watchers = new Map<string, Set<() => void>>();
  private loop: Promise<void> | undefined;
  /** The pump at work or asleep, for settled(). */
  private readonly pumpIdle: LoopIdle;
  private stopping = false;
  private dirty = false;
  private wakeLoop: AbortController | undefined;
  /** Aborted by stop(): ends the pauses of turns whose own writes failed transiently (see launch). */
  private halt = new AbortController();
  /** Turns in a row, by procedure, whose own writes (claims' reads, commits) failed transiently. */
  private readonly storageFailures = new Map<string, number>();

  constructor(
    private readonly database: Database,
    options: ProcedureRunnerOptions = {},
  ) {
    this.clock = options.clock ?? systemClock;
    this.types = options.types ?? new ProcedureTypes();
    this.maxConcurrent = options.maxConcurrent ?? 128;
    this.retentionMs = options.retentionMs ?? 7 * DAY_MS;
    this.owner = options.owner ?? processOwner();
    this.leaseMs = options.leaseMs ?? 30_000;
    this.pollMs = options.pollMs ?? 1_000;
    this.onSubmitted = options.onSubmitted;
    this.idlePollMs = Math.max(this.pollMs, options.idlePollMs ?? IDLE_POLL_FACTOR * this.pollMs);
    this.pumpIdle = new LoopIdle(this.clock);
    this.records = new ProcedureRecords(database.db, this.clock);
    this.turns = new TurnRunner({
      owner: this.owner,
      clock: this.clock,
      database,
      commits: new GroupCommitter(database),
      records: this.records,
      runner: this,
      isStopping: () => this.stopping,
      stepCommitted: (id, addedChildren) => {
        this.notify(id);
        if (addedChildren) this.signal();
      },
    });
  }

  async submit(type: string, state: Json, options: SubmitOptions = {}): Promise<string> {
    const definition = this.types.get(type);
    if (!definition) throw badRequest(`Unknown procedure type "${type}"`);
    const instance = definition.create(state);
    const id = options.id ?? `${type}:${crypto.randomUUID()}`;
    const existing = await this.database.db.procedure.findUnique({ where: { id } });
    if (existing) return this.existing(existing, type);
    const parent = options.parentId ? await this.database.db.procedure.findUnique({ where: { id: options.parentId } }) : null;
    if (options.parentId && !parent) throw notFound(`Parent procedure ${options.parentId}`);
    const record = this.records.create(instance, { id, type, state }, parent);
    if (parent) await this.records.refuseConflictWithAncestors(record, parent);
    const data = newProcedureRecord({ ...record, tenantId: options.tenantId ?? record.tenantId, workflowId: options.workflowId ?? record.workflowId });
    try {
      await insertProcedure(this.database, data, options.together);
    } catch (error) {
      // Submitted twice at once under one id: the other submit's row is the answer. A unique violation of a write
      // submitted together leaves no such row.
      const existing = isUniqueViolation(error) ? await this.database.db.procedure.findUnique({ where: { id } }) : null;
      if (!existing) throw error;
      return this.existing(existing, type);
    }
    this.signal();
    this.onSubmitted?.();
    return id;
  }

  async get(id: string): Promise<ProcedureView | null> {
    const row = await this.database.db.procedure.findUnique({ where: { id } });
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
    const row = await this.database.db.procedure.findUnique({ where: { id } });
    if (!row) throw notFound(`Procedure ${id}`);
    if (row.state !== 'failed') throw conflict(`Procedure ${id} is ${row.state}; only a failed procedure can be retried`, { state: row.state });
    const now = this.clock.now();
    // A parent that failed because of a child resumes only if that child gets its own retry, so retry failed children too.
    const failedChildren = await this.database.db.procedure.findMany({ where: { parentId: id, state: 'failed' }, select: { id: true } });
    const reset = { state: 'running', attempts: 0, error: null, nextRunMs: 0n, owner: null, finishedAt: null, updatedAt: new Date(now) };
    const updated = await this.database.db.procedure.updateMany({ where: { id, state: 'failed' }, data: reset });
    if (updated.count !== 1) throw conflict(`Procedure ${id} was retried or changed concurrently`);
    for (const child of failedChildren) await this.retry(child.id);
    this.notify(id);
    this.signal();
    this.onSubmitted?.();
    return (await this.get(id))!;
  }

  async start(): Promise<void> {
    if (this.loop) return;
    this.stopping = false;
    this.halt = new AbortController();
    this.pumpIdle.started();
    this.loop = this.run().finally(() => this.pumpIdle.stopped());
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.wakeLoop?.abort();
    this.halt.abort();
    await this.loop;
    this.loop = undefined;
    await Promise.all(this.executing.values());
    this.types.close();
    // Every procedure of ours is between two steps now: hand them over at once instead of after the lease. They keep
    // their place in the lock queue (creation order), so nothing conflicting can slip in before they resume.
    await releaseOwned(this.database.db, this.owner, this.clock.now());
  }

  settled(): Promise<void> {
    if (this.loop) this.signal();
    return this.pumpIdle.settled();
  }

  asleep(): Promise<void> {
    return this.pumpIdle.settled();
  }

  wake(): void {
    this.signal();
  }

  async cleanup(): Promise<number> {
    const cutoff = new Date(this.clock.now() - this.retentionMs);
    let removed = 0;
    for (;;) {
      const batch = await this.database.db.procedure.findMany({
        where: { state: { in: [...FINISHED_STATES] }, finishedAt: { lt: cutoff } },
        select: { id: true },
        take: 500,
      });
      if (batch.length === 0) return removed;
      const ids = batch.map((r) => r.id);
      await deleteProcedures(this.database, ids);
      removed += ids.length;
    }
  }

  /**
   * The pump: claim what may run, start it, then sleep until something changes, a backoff is due, or the poll. While
   * nothing is unfinished the poll doubles up to `idlePollMs`; any work (or a wake) brings it back to `pollMs`.
   */
  private async run(): Promise<void> {
    let lastHeartbeat = 0;
    let lastCleanup = 0;
    let poll = this.pollMs;
    while (!this.stopping) {
      const woken = this.dirty;
      this.dirty = false;
      const now = this.clock.now();
      let nextDueMs: number | null = null;
      let idle = false;
      try {
        if (now - lastHeartbeat >= this.leaseMs / 3) {
          await heartbeat(this.database.db, this.owner, now);
          lastHeartbeat = now;
        }
        if (now - lastCleanup >= CLEANUP_EVERY_MS) {
          await this.cleanup();
          lastCleanup = now;
        }
        const free = this.maxConcurrent - this.executing.size;
        if (free > 0) {
          const claim = await claimReady(this.database, {
            owner: this.owner,
            now,
            leaseMs: this.leaseMs,
            limit: free,
            busy: new Set(this.executing.keys()),
            isRegistered: (type) => this.types.has(type),
          });
          nextDueMs = claim.nextDueMs;
          idle = claim.idle;
          for (const row of claim.claimed) this.launch(row, claim.withChildren.has(row.id));
        }
      } catch (error) {
        console.error('[procedures] claim failed; retrying', error);
      }
      poll = idle && !woken ? Math.min(poll * 2, this.idlePollMs) : this.pollMs;
      // Procedures of ours still executing keep their leases renewed in time, however long the idle poll.
      const heartbeatDue = this.executing.size > 0 ? lastHeartbeat + this.leaseMs / 3 - this.clock.now() : Infinity;
      const wait = Math.min(poll, heartbeatDue, nextDueMs === null ? Infinity : nextDueMs - this.clock.now());
      if (this.dirty || this.stopping || wait <= 0) {
        // Look again at once, but let timers and I/O run first (SQLite calls resolve without ever yielding to them).
        await new Promise((resolve) => setImmediate(resolve));
        continue;
      }
      this.wakeLoop = new AbortController();
      await this.pumpIdle.sleep(wait, this.wakeLoop.signal);
    }
  }

  private launch(row: ProcedureRow, hasChildren: boolean): void {
    const turn = this.turns
      .run(row, hasChildren)
      .then(() => void this.storageFailures.delete(row.id))
      .catch(async (error) => {
        if (!isTransientStorageError(error)) this.storageFailures.delete(row.id);
        if (error instanceof LeaseLostError) return;
        if (!isTransientStorageError(error)) return console.error(`[procedures] ${row.id} (${row.type}) stopped unexpectedly`, error);
        // A write of the runner itself failed (the turn could not even record the failure): the procedure stays ours
        // and runs again from its last committed step, after a backoff that keeps its slot, so an overloaded database
        // is not asked again at once.
        const failures = (this.storageFailures.get(row.id) ?? 0) + 1;
        this.storageFailures.set(row.id, failures);
        console.warn(`[procedures] ${row.id} (${row.type}) storage error: ${describeStorageError(error)}; running it again after a backoff`);
        await this.clock.sleep(backoffDelay(failures), this.halt.signal);
      })
      .finally(() => {
        this.executing.delete(row.id);
        this.notify(row.id);
        if (row.parentId) this.notify(row.parentId);
        this.signal();
      });
    this.executing.set(row.id, turn);
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

export function createProcedureRunner(database: Database, options: ProcedureRunnerOptions = {}): ProcedureRunner {
  return new DurableProcedureRunner(database, options);
}
