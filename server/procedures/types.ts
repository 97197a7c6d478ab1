// The public contract of the durable procedure runner (after GreptimeDB's procedure framework).
// Procedure types (engine: instance.start, instance.stop, …) code against these types only:
// `runner.types.register()` (./registry) on the runner the app built (server/create-app.ts, started by server/boot.ts).
import type { Clock } from '../clock';
import type { ProcedureTypes } from './registry';
import type { Database } from '../storage/database';
import type { Tx } from '../storage/db';

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export type LockMode = 'shared' | 'exclusive';
export interface LockKey {
  key: string;
  mode: LockMode;
}

/** Persisted life cycle: running → done, or running → retrying → … → prepare-rollback → rolling-back → failed. */
export const PROCEDURE_STATES = ['running', 'retrying', 'prepare-rollback', 'rolling-back', 'done', 'failed'] as const;
export type ProcedureState = (typeof PROCEDURE_STATES)[number];
export const FINISHED_STATES: readonly ProcedureState[] = ['done', 'failed'];

export interface ChildProcedure {
  type: string;
  state: Json;
  /** Deterministic id; defaults to `<parentId>:<step>.<index>` so a replayed suspension never submits twice. */
  id?: string;
}

/** What one call of execute() asks the runner to do next. */
export type ProcedureStatus =
  | { kind: 'executing' } // persist state() as a new step and call execute() again
  | { kind: 'suspended'; children: ChildProcedure[] } // persist, submit children, call execute() again when all ended
  | { kind: 'done'; output?: Json }; // persist the output; the procedure is finished

/** What one call of rollback() asks: `rolling-back` persists state() as a step and calls rollback() again. */
export type RollbackStatus = { kind: 'rolling-back' } | { kind: 'rolled-back' };

export interface ProcedureContext {
  procedureId: string;
  /** Number of steps committed so far (execute and rollback steps alike). */
  step: number;
  clock: Clock;
  tenantId: string | null;
  workflowId: string | null;
  /** Outputs of the finished children of this procedure, by child id (empty before any suspension). */
  childOutputs: Record<string, Json>;
  runner: ProcedureRunner;
  /** The runner's storage: what a procedure reads and writes rows through. */
  database: Database;
}

export interface ProcedureInstance {
  lockKeys(): LockKey[];
  /** Runs one step. Throw RetryLaterError for a transient failure; any other throw starts the rollback. */
  execute(ctx: ProcedureContext): Promise<ProcedureStatus>;
  /** Undoes work; must be idempotent per step (a crash mid-step repeats the uncommitted step). */
  rollback?(ctx: ProcedureContext): Promise<RollbackStatus | void>;
  /** The JSON persisted after each step; create(state()) must rebuild an equivalent instance. */
  state(): Json;
}

export interface ProcedureTypeDefinition {
  type: string;
  /** Retries of a retry-later error (and of a failing rollback step) before giving up. Default 3. */
  maxRetries?: number;
  supportsRollback: boolean;
  create(state: Json): ProcedureInstance;
  /** Releases what the type holds between procedures (kept-alive sockets) when its runner stops; a restart reuses it. */
  close?(): void;
}

/**
 * The only error the runner retries (with exponential backoff); everything else rolls back / fails. A transient failure
 * is retried `maxRetries` times. A wait (`waitMs` set: a resource another process still holds, such as partitions this
 * process is taking over after a restart) is retried without counting against `maxRetries`, every second at most,
 * until `waitMs` have passed since the wait began; only then does the procedure fail (or roll back).
 */
export class RetryLaterError extends Error {
  readonly waitMs: number | undefined;
  constructor(message: string, options?: { cause?: unknown; waitMs?: number }) {
    super(message, options);
    this.name = 'RetryLaterError';
    this.waitMs = options?.waitMs;
  }
}

export interface SubmitOptions {
  /** A deterministic id: submitting an existing id returns it without a second run. */
  id?: string;
  parentId?: string;
  tenantId?: string;
  workflowId?: string;
  /**
   * Writes that must commit with the procedure row or not at all (an instance row and its start): they run first, in
   * the same transaction, so neither is left without the other when one fails.
   */
  together?: (tx: Tx) => Promise<void>;
}

/** A procedure as stored and shown (API, studio). */
export interface ProcedureView {
  id: string;
  type: string;
  parentId: string | null;
  tenantId: string | null;
  workflowId: string | null;
  lockKeys: LockKey[];
  state: ProcedureState;
  step: number;
  data: Json;
  output: Json | null;
  /** The failure that started the rollback (or failed the procedure). */
  error: string | null;
  /** The last failure of the rollback itself, when it failed too. */
  rollbackError: string | null;
  /** Retries so far of the current step (or rollback step); a failed procedure keeps the count it failed with. */
  attempts: number;
  /** When a retrying procedure runs its next attempt. */
  nextAttemptAt: string | null;
  /** Since when a retrying procedure has been waiting for a resource (see RetryLaterError.waitMs), else null. */
  waitingSince: string | null;
  owner: string | null;
  createdAt: string;
  updatedAt: string;
  finishedAt: string | null;
}

export interface ProcedureRunner {
  readonly owner: string;
  /** The procedure types this runner runs (registered by the parts that own them: the engine, the webhooks). */
  readonly types: ProcedureTypes;
  submit(type: string, state: Json, options?: SubmitOptions): Promise<string>;
  /** Resolves with the procedure once done or failed, or as it is when timeoutMs (runner clock) elapses. */
  await(id: string, timeoutMs?: number): Promise<ProcedureView>;
  get(id: string): Promise<ProcedureView | null>;
  /** Puts a failed procedure back to running from its last persisted step (409 otherwise). */
  retry(id: string): Promise<ProcedureView>;
  /** Resumes every unfinished procedure from its last persisted step, then keeps running new ones. */
  start(): Promise<void>;
  /** Stops taking work and waits for the steps in flight to finish (their procedures stay resumable). */
  stop(): Promise<void>;
  /** Removes finished procedures (and their steps) older than the retention. Returns how many. */
  cleanup(): Promise<number>;
  /**
   * Has the runner's pump look for work once more and resolves once it sleeps until a later time of its clock: every
   * procedure that may run by then has been claimed and started (steps in flight may still run: await(id) waits for
   * them). Tests move a ManualClock or submit, then await this instead of sleeping, e.g. to see that a procedure was
   * not started.
   */
  settled(): Promise<void>;
  /** Resolves once the pump sleeps until a later time of its clock, without waking it (tests of what it does unwoken). */
  asleep(): Promise<void>;
  /** Has the pump look for work now: a procedure was submitted through another runner of this process (its engine thread's). */
  wake(): void;
}

export interface ProcedureRunnerOptions {
  clock?: Clock;
  /** The procedure types it runs (server/create-app.ts builds one table per app); a table of its own by default. */
  types?: ProcedureTypes;
  /** At most this many procedures execute at once in this process; more wait in order. Default 128. */
  maxConcurrent?: number;
  /** Finished procedures are kept this long. Default 7 days. */
  retentionMs?: number;
  /** This process's lease name; a process restarting under the same owner resumes its own claims at once. */
  owner?: string;
  /** A claim not renewed for this long may be taken over by another process. Default 30 s. */
  leaseMs?: number;
  /** How often to look for work submitted by other processes / expired leases. Default 1 s. */
  pollMs?: number;
  /**
   * With nothing unfinished, the poll doubles from `pollMs` up to this (submits, retries and finished turns of this
   * process wake it at once; another process's submit waits at most this). Default 8 × `pollMs` (8 s).
   */
  idlePollMs?: number;
  /** Told after each submit and retry: a runner that only submits (the engine thread's) wakes the one that runs them. */
  onSubmitted?: () => void;
}
