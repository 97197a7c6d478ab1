import { isDeadLocalOwner } from '../process-owner';
import type { Database } from '../storage/database';
import type { Db } from '../storage/db';
import type { Procedure } from '../storage/generated/sqlite/client';
import { claimProcedures, type QueuedProcedure } from '../storage/procedure-claims';
import { commitSuspension } from '../storage/procedure-rows';
import type { GroupCommitter } from './commits';
import { compareOrder, LockTable } from './locks';
import { FINISHED_STATES, type Json, type LockKey, type ProcedureState, type ProcedureView } from './types';

// Every write of a running procedure is fenced by its owner: a process that lost its lease (another took the
// procedure over) fails the write and abandons the procedure instead of running a step twice.

export type ProcedureRow = Procedure;

/** Thrown when a fenced write finds the procedure no longer ours (lease taken over, or deleted). */
export class LeaseLostError extends Error {
  constructor(id: string) {
    super(`Procedure ${id} is no longer owned by this runner`);
    this.name = 'LeaseLostError';
  }
}

/** The stored error: the failure that started the rollback, and the last rollback failure if any. */
export interface StoredError {
  message: string;
  rollbackError?: string;
  /** Set while the procedure waits for a resource: when the wait began (its deadline counts from here). */
  waitingSinceMs?: number;
  /** Attempts made by the step that failed; the failed procedure shows them again once its rollback is over. */
  attempts?: number;
}

export function parseError(text: string | null): StoredError | null {
  return text === null ? null : (JSON.parse(text) as StoredError);
}

export function toView(row: ProcedureRow): ProcedureView {
  const error = parseError(row.error);
  return {
    id: row.id,
    type: row.type,
    parentId: row.parentId,
    tenantId: row.tenantId,
    workflowId: row.workflowId,
    lockKeys: JSON.parse(row.lockKeys) as LockKey[],
    state: row.state as ProcedureState,
    step: row.step,
    data: JSON.parse(row.data) as Json,
    output: row.output === null ? null : (JSON.parse(row.output) as Json),
    error: error?.message ?? null,
    rollbackError: error?.rollbackError ?? null,
    attempts: row.attempts,
    nextAttemptAt: row.nextRunMs > 0n ? new Date(Number(row.nextRunMs)).toISOString() : null,
    waitingSince: error?.waitingSinceMs !== undefined ? new Date(error.waitingSinceMs).toISOString() : null,
    owner: row.owner,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
    finishedAt: row.finishedAt?.toISOString() ?? null,
  };
}

export interface NewProcedure {
  id: string;
  type: string;
  parentId: string | null;
  tenantId: string | null;
  workflowId: string | null;
  lockKeys: LockKey[];
  data: Json;
  createdAt: Date;
  /** Set for records that are finished on arrival (e.g. a skipped scheduled firing). */
  output?: Json;
}

export function newProcedureRecord(p: NewProcedure) {
  const finished = p.output !== undefined;
  return {
    id: p.id,
    type: p.type,
    parentId: p.parentId,
    tenantId: p.tenantId,
    workflowId: p.workflowId,
    lockKeys: JSON.stringify(p.lockKeys),
    state: finished ? 'done' : 'running',
    data: JSON.stringify(p.data),
    output: finished ? JSON.stringify(p.output) : null,
    createdAt: p.createdAt,
    updatedAt: p.createdAt,
    finishedAt: finished ? p.createdAt : null,
  };
}

export interface StepUpdate {
  state: ProcedureState;
  data: Json;
  attempts?: number;
  output?: Json;
  error?: StoredError | null;
  nextRunMs?: number;
}

function updateFields(update: Omit<StepUpdate, 'data'> & { data?: Json }, now: number) {
  const finished = FINISHED_STATES.includes(update.state);
  return {
    state: update.state,
    ...(update.data !== undefined ? { data: JSON.stringify(update.data) } : {}),
    ...(update.attempts !== undefined ? { attempts: update.attempts } : {}),
    ...(update.output !== undefined ? { output: JSON.stringify(update.output) } : {}),
    ...(update.error !== undefined ? { error: update.error === null ? null : JSON.stringify(update.error) } : {}),
    nextRunMs: BigInt(update.nextRunMs ?? 0),
    updatedAt: new Date(now),
    // A finished procedure holds no locks and no lease.
    ...(finished ? { owner: null, finishedAt: new Date(now) } : {}),
  };
}

/**
 * Commits one step: the new state and step counter and a ProcedureStep record, through the group committer; a
 * suspension also creates its children in the same transaction (`children` whose ids already exist are left alone:
 * a replayed suspension).
 */
export async function commitStep(
  database: Database,
  committer: GroupCommitter,
  id: string,
  owner: string,
  step: number,
  update: StepUpdate,
  now: number,
  children: NewProcedure[] = [],
): Promise<void> {
  if (children.length > 0) {
    const stepRecord = { state: update.state, data: JSON.stringify(update.data), createdAt: new Date(now) };
    if (!(await commitSuspension(database, { id, owner, step }, updateFields(update, now), stepRecord, children.map(newProcedureRecord))))
      throw new LeaseLostError(id);
    return;
  }
  const matched = await committer.write({ id, owner, step, update, now, nextStep: true });
  if (!matched) throw new LeaseLostError(id);
}

/** A state change that is not a step (retrying, prepare-rollback, failed without a rollback step). */
export async function transition(
  committer: GroupCommitter,
  id: string,
  owner: string,
  step: number,
  update: Omit<StepUpdate, 'data'>,
  now: number,
): Promise<void> {
  if (!(await committer.write({ id, owner, step, update, now, nextStep: false }))) throw new LeaseLostError(id);
}

/** Renews the lease of every unfinished procedure this owner holds. */
export async function heartbeat(db: Db, owner: string, now: number): Promise<void> {
  await db.procedure.updateMany({ where: { owner, state: { notIn: [...FINISHED_STATES] } }, data: { updatedAt: new Date(now) } });
}

/** Gives up this owner's claims (a graceful stop), so another process resumes them without waiting for the lease. */
export async function releaseOwned(db: Db, owner: string, now: number): Promise<void> {
  await db.procedure.updateMany({ where: { owner, state: { notIn: [...FINISHED_STATES] } }, data: { owner: null, updatedAt: new Date(now) } });
}

export interface ClaimRequest {
  owner: string;
  now: number;
  leaseMs: number;
  limit: number;
  /** Procedures already executing in this process. */
  busy: ReadonlySet<string>;
  isRegistered(type: string): boolean;
}

export interface ClaimResult {
  claimed: ProcedureRow[];
  /** The claimed procedures that have child procedures (the others need not look for child outputs). */
  withChildren: Set<string>;
  /** Earliest time a backoff ends or another owner's lease expires (for the runner's next wake-up). */
  nextDueMs: number | null;
  /** Nothing unfinished but the procedures this process executes: the runner may poll less often. */
  idle: boolean;
}

/**
 * Claims, in queue order, up to `limit` procedures this owner may run now: due, not waiting for children, not held by
 * another live owner, and whose lock keys are free (no conflicting holder, no conflicting procedure queued earlier).
 */
export async function claimReady(database: Database, request: ClaimRequest): Promise<ClaimResult> {
  // Idle check without the claim lock: on SQLite that lock is the database's single write lock.
  const waiting = await database.db.procedure.count({ where: { state: { notIn: [...FINISHED_STATES] }, id: { notIn: [...request.busy] } } });
  if (waiting === 0) return { claimed: [], withChildren: new Set(), nextDueMs: null, idle: true };
  let nextDueMs: number | null = null;
  const { claimed, withChildren } = await claimProcedures(database, request.owner, request.now, (unfinished) => {
    const byId = new Map(unfinished.map((row) => [row.id, row]));
    const waitingForChildren = new Set(unfinished.flatMap((row) => (row.parentId ? [row.parentId] : [])));
    const queue = unfinished.map((row) => ({ row, order: queueOrder(row, byId) })).sort((a, b) => compareOrder(a.order, b.order));
    const locks = new LockTable();
    for (const { row } of queue) if (row.owner !== null) locks.take(keysOf(row));
    const runnable: QueuedProcedure[] = [];
    for (const { row } of queue) {
      // A procedure without an owner holds no locks yet; it queues for them whether or not it can run now.
      if (row.owner === null) {
        const keys = keysOf(row);
        const blocked = locks.conflicts(keys);
        locks.take(keys);
        if (blocked) continue;
      }
      if (request.busy.has(row.id) || waitingForChildren.has(row.id) || !request.isRegistered(row.type)) continue;
      if (row.owner && row.owner !== request.owner && !leaseExpired(row, request)) {
        nextDueMs = Math.min(nextDueMs ?? Infinity, row.updatedAt.getTime() + request.leaseMs);
        continue;
      }
      if (Number(row.nextRunMs) > request.now) {
        nextDueMs = Math.min(nextDueMs ?? Infinity, Number(row.nextRunMs));
        continue;
      }
      runnable.push(row);
    }
    return fairShare(runnable, request.limit);
  });
  return { claimed, withChildren, nextDueMs, idle: false };
}

/**
 * Up to `limit` of the runnable procedures (in queue order), taken round-robin across tenants: a tenant that queued a
 * thousand procedures gets no more of this claim's slots than one that queued a few.
 */
export function fairShare<T extends { tenantId: string | null }>(runnable: T[], limit: number): T[] {
  const byTenant = new Map<string | null, T[]>();
  for (const row of runnable) {
    const rows = byTenant.get(row.tenantId);
    if (rows) rows.push(row);
    else byTenant.set(row.tenantId, [row]);
  }
  const lanes = [...byTenant.values()];
  const chosen: T[] = [];
  for (let round = 0; chosen.length < limit && lanes.some((lane) => round < lane.length); round++) {
    for (const lane of lanes) if (round < lane.length && chosen.length < limit) chosen.push(lane[round]);
  }
  return chosen;
}

function leaseExpired(row: QueuedProcedure, request: ClaimRequest): boolean {
  return row.updatedAt.getTime() + request.leaseMs <= request.now || isDeadLocalOwner(row.owner);
}

function keysOf(row: QueuedProcedure): LockKey[] {
  return JSON.parse(row.lockKeys) as LockKey[];
}

/** Queue position: a child inherits its ancestors' positions, so it is ordered right after its root. */
function queueOrder(row: QueuedProcedure, byId: Map<string, QueuedProcedure>): (string | number)[] {
  const chain: QueuedProcedure[] = [];
  for (
    let current: QueuedProcedure | undefined = row;
    current && !chain.includes(current);
    current = current.parentId ? byId.get(current.parentId) : undefined
  ) {
    chain.unshift(current);
  }
  return chain.flatMap((r) => [r.createdAt.getTime(), r.id]);
}
