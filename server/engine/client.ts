// The request thread's engine: starts the engine thread (server/engine/thread.ts) and answers routes without ever
// waiting for a partition. Counts and the counts stream come from the counts the engine publishes after every change
// (the board); where-is-user, exports and the instance operations are calls the engine answers between two slices of
// its work; instance lists and snapshots are read from the database here. See docs/engine.md "The engine thread".
import { registerWinnerProcedure, submitWinner, type WinnerRequest } from './experiments';
import type { Worker } from 'node:worker_threads';
import type { Principal } from '../auth';
import { RoaringBitmap32 } from '../crowd/bitmap';
import type { Json, ProcedureRunner } from '../procedures/types';
import type { Database } from '../storage/database';
import type { IngestState } from './ingest-state';
import { profileIndexes } from '../profiles/index-store';
import type { Env } from '../env';
import { ACTIVE_INSTANCE_STATES } from '../tenants/tenants';
import type { EngineHandle } from './handle';
import { prepareIngestBody, type IngestOutcome } from './ingest';
import * as ops from './instances';
import { deserializeError, type EngineCallName, type EngineCalls, type FromEngine, type ToEngine } from './thread-protocol';
import { EngineThread } from './thread-spawn';
import { CountsPushes } from './counts-pushes';
import { ENGINE_PING_EVERY_MS, EngineLiveness } from './liveness';
import type { ClusterCounts, JoinCluster } from './cluster-port';
import { AppError } from '../errors';
import type { ProfileCalls } from '../profiles/calls';
import type { ImportFormat, ImportResult } from '../profiles/import';
import { ImportBodySender } from './profile-import-stream';
import type {
  Counts,
  CountsCoverage,
  CountsListener,
  InstanceView,
  SnapshotView,
  StartRequest,
  StepUsers,
  HoldoutGroup,
  SubmittedOperation,
  UpdateWorkflowRequest,
} from './types';

/** A thread that died is started again after this pause (its leases are taken back at once under the same owner). */
const RESTART_AFTER_MS = 1_000;

type Pending = { resolve: (value: unknown) => void; reject: (error: Error) => void };

/** An instance in this state has live counts (a starting one has none yet; a stopped one has its snapshot's). */
const countedLive = (state: string) => ACTIVE_INSTANCE_STATES.includes(state) && state !== 'starting';

export class EngineClient implements EngineHandle, ops.InstanceEngine {
  private worker: Worker | undefined;
  private readonly board = new Map<string, { tenantId: string; counts: Counts; coverage: CountsCoverage }>();
  /** In a cluster: the counts other members publish for the partitions this process does not hold. */
  private cluster: ClusterCounts | undefined;
  private readonly pushes = new CountsPushes();
  private readonly pending = new Map<number, Pending>();
  private nextCallId = 0;
  private stopping = false;
  private liveness = new EngineLiveness();
  private pinging: ReturnType<typeof setInterval> | undefined;
  /** Profile imports whose bodies are being sent to the engine thread, by id. */
  private readonly imports = new Map<number, ImportBodySender>();
  private nextImportId = 0;
  /**
   * The first start, until the engine thread says it is ready: the server listens before then (server/main.ts), and a
   * call made meanwhile waits for it instead of reaching a thread that has not started its engine.
   */
  private starting: Promise<void> | undefined;
  private ready = false;

  constructor(
    /** This thread's storage: instance rows and snapshots are read, and operations checked and submitted, here. */
    readonly database: Database,
    readonly runner: ProcedureRunner,
    /** The thread's ingest state (its recent log is the engine thread's business when there is one). */
    private readonly ingestState: IngestState,
    /** The app's environment: the engine thread builds its own app by it (server/engine/thread.ts). */
    private readonly env: Env,
    /** Joins this process's cluster from this thread (server/cluster/channel.ts); undefined: it is no member. */
    private readonly joinCluster: JoinCluster | undefined,
    /** The engine thread the server entry spawned early (server/main.ts), taken at the first start. */
    private early: EngineThread | undefined = undefined,
  ) {
    ops.registerInstanceProcedures(this);
    registerWinnerProcedure(this);
  }

  async start(): Promise<void> {
    this.starting = this.startThread();
    await this.starting;
  }

  private async startThread(): Promise<void> {
    this.ready = false;
    this.stopping = false;
    // Event batches are appended by the engine thread itself (ingestPrepared), which hands them to its partition
    // loops from memory. Rows appended in this thread (appendEvents) are read from the log there: handing them over would
    // cost this thread a structured clone (≈ 4 ms per 1,000 events measured).
    this.ingestState.recentLog.enabled = false;
    // The membership first (this thread holds it): the engine's first assignment then counts this member.
    this.liveness = new EngineLiveness();
    this.cluster = await this.joinCluster?.(
      (instanceId, tenantId) => this.schedulePush(instanceId, tenantId),
      () => this.liveness.responsive(),
    );
    await this.spawn();
    // In a cluster, a hung engine thread must not keep its partitions: the membership's heartbeat asks how it answers.
    if (this.cluster) {
      this.pinging = setInterval(() => {
        if (this.liveness.shouldAsk()) this.call('alive').catch(() => undefined);
      }, ENGINE_PING_EVERY_MS).unref();
    }
    this.database.local.noticeRelay = (name, args) => this.post({ kind: 'notice', name, args });
    profileIndexes(this.database).relay = (tenantId, write, seq) => this.post({ kind: 'profiles', tenantId, write, seq });
    this.ready = true;
  }

  async stop(): Promise<void> {
    if (!this.worker || this.stopping) return;
    this.stopping = true;
    clearInterval(this.pinging);
    this.database.local.noticeRelay = undefined;
    profileIndexes(this.database).relay = undefined;
    const worker = this.worker;
    const exited = new Promise((resolve) => worker.once('exit', resolve));
    await this.call('stop').catch((error: Error) => console.error('[crowdflow] the engine thread did not stop cleanly', error));
    await exited;
    // Left only now, once the engine has handed its partitions back (the others must not count it gone before).
    await this.cluster?.close();
    this.cluster = undefined;
    this.worker = undefined;
    this.pushes.clear();
  }

  /** Starts the engine in `thread` (the one the server entry spawned early, at boot) and resolves once it runs. */
  private spawn(thread: EngineThread = this.takeThread()): Promise<void> {
    const worker = thread.worker;
    this.worker = worker;
    return new Promise<void>((resolve, reject) => {
      thread.listen({
        message: (message) => {
          this.liveness.heard();
          if (message.kind === 'ready') resolve();
          else if (message.kind === 'failed') reject(deserializeError(message.error));
          else this.received(message);
        },
        error: (error) => {
          console.error('[crowdflow] the engine thread failed', error);
          reject(error);
        },
        exit: (code) => {
          this.liveness.heard(); // a thread started again is given its full time to answer
          const gone = new Error(`the engine thread exited (code ${code})`);
          for (const call of this.pending.values()) call.reject(gone);
          this.pending.clear();
          reject(gone);
          if (this.stopping || this.worker !== worker) return;
          console.error(`[crowdflow] ${gone.message}; starting it again in ${RESTART_AFTER_MS} ms`);
          setTimeout(
            () => void this.spawn(new EngineThread(this.env)).catch((error) => console.error('[crowdflow] the engine thread did not start again', error)),
            RESTART_AFTER_MS,
          ).unref();
        },
      });
      worker.postMessage({ kind: 'start' } satisfies ToEngine);
    });
  }

  /** The thread spawned early, handed over once; otherwise a new one. */
  private takeThread(): EngineThread {
    const early = this.early;
    this.early = undefined;
    return early ?? new EngineThread(this.env);
  }

  private received(message: FromEngine): void {
    if (message.kind === 'counts') {
      this.board.set(message.counts.instanceId, { tenantId: message.tenantId, counts: message.counts, coverage: message.coverage });
      this.schedulePush(message.counts.instanceId);
    } else if (message.kind === 'import-read') {
      this.imports.get(message.id)?.taken(message.bytes);
    } else if (message.kind === 'cluster-notice') {
      this.database.local.clusterRelay?.(message.name, message.args);
    } else if (message.kind === 'procedures-submitted') {
      this.runner.wake();
    } else if (message.kind === 'reply') {
      const call = this.pending.get(message.id);
      this.pending.delete(message.id);
      if ('error' in message) call?.reject(deserializeError(message.error));
      else call?.resolve(message.value);
    }
  }

  private post(message: ToEngine, transfer: ArrayBuffer[] = []): void {
    this.worker?.postMessage(message, transfer);
  }

  /** Calls the engine thread's `name` (typed by the engine's own method). */
  private call<N extends EngineCallName>(name: N, ...args: Parameters<EngineCalls[N]>): Promise<Awaited<ReturnType<EngineCalls[N]>>> {
    if (!this.ready && this.starting) return this.starting.then(() => this.call(name, ...args));
    const worker = this.worker;
    if (!worker) return Promise.reject(new Error('the engine thread is not running'));
    const id = this.nextCallId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
      worker.postMessage({ kind: 'call', id, name, args } satisfies ToEngine);
    });
  }

  /** The engine's method `name` as a call of the engine thread (same parameters and result). */
  private forward<N extends EngineCallName>(name: N): (...args: Parameters<EngineCalls[N]>) => Promise<Awaited<ReturnType<EngineCalls[N]>>> {
    return (...args) => this.call(name, ...args);
  }

  wakeTenant(tenantId: string): void {
    this.post({ kind: 'wake', tenantId });
  }

  /**
   * Decoding, validating, hashing and encoding the batch run here, beside the other request work, so the engine
   * thread (whose core applies the events) only decides duplicates, writes the rows and decodes them to apply them.
   * The encoded rows cross as one buffer (≈ 17 bytes an event).
   */
  async ingestBody(principal: Principal, body: Uint8Array, now: number, key?: string): Promise<IngestOutcome> {
    const prepared = await prepareIngestBody(this.database, this.ingestState, principal, body, now, key);
    try {
      return await this.call('ingestPrepared', prepared, now);
    } catch (error) {
      if (error instanceof AppError) throw error;
      // The engine thread ended (it is started again) or failed unexpectedly. Nothing was acknowledged, but the append may
      // have committed before the thread ended: only a resend under the same key or event ids is safe from doubling.
      console.error('[crowdflow] event batch not taken by the engine thread:', error);
      throw new AppError(
        'unavailable',
        'The engine did not answer for this batch, which may or may not have been stored: send it again with the same Idempotency-Key or event ids',
        { retryAfterSeconds: 1 },
      );
    }
  }

  // ---- counts: from the board, never waiting for the engine ----------------------------------------------------

  liveUserCount(instanceId: string): number | undefined {
    return this.board.get(instanceId)?.counts.total;
  }

  async getCounts(tenantId: string, instanceId: string): Promise<Counts> {
    return (await this.clusterCounts(tenantId, instanceId)) ?? this.call('getCounts', tenantId, instanceId);
  }

  async liveCounts(tenantId: string, instanceId: string): Promise<Counts | undefined> {
    return (await this.clusterCounts(tenantId, instanceId)) ?? this.call('liveCounts', tenantId, instanceId);
  }

  /**
   * What this process's engine published, when it holds every partition of the instance; in a cluster, that plus
   * the figures other members publish for the rest (or a 503 partition_moving while one has none). Undefined: ask the
   * engine (a stopped instance's snapshot, an instance not loaded yet).
   */
  private async clusterCounts(tenantId: string, instanceId: string): Promise<Counts | undefined> {
    const entry = this.board.get(instanceId);
    const published = entry?.tenantId === tenantId ? entry : undefined;
    if (published && published.coverage.held.length === published.coverage.partitions) return published.counts;
    // Alone, a partition missing from the figures is being rebuilt after a failed commit: the engine answers (503).
    if (!this.cluster) return undefined;
    // Nothing published here: the instance may be one this engine stopped, whose counts are its snapshot's from the
    // stop's commit on. The figures the cluster keeps of it lag: the engine publishes them PUBLISH_EVERY_MS after a
    // change (a stop within that time replaces them with their removal) and removes them only then, so read after a
    // stop they could lack its last change (an experiment's crowd update, its 200 users on the winning path).
    const row = published ? undefined : await ops.requireInstance(this.database, tenantId, instanceId);
    if (row && !countedLive(row.state)) return undefined;
    const combined = await this.cluster.counts(tenantId, instanceId, published && { counts: published.counts, ...published.coverage });
    if (combined) return combined;
    if (countedLive((row ?? (await ops.requireInstance(this.database, tenantId, instanceId))).state)) {
      throw new AppError(
        'partition_moving',
        `Instance ${instanceId} has no committed counts from the cluster member holding its partitions yet; retry shortly`,
        { retryAfterSeconds: 1 },
      );
    }
    return undefined;
  }

  subscribeCounts(instanceId: string, listener: CountsListener): () => void {
    return this.pushes.subscribe(instanceId, listener);
  }
  onCountsChanged(listener: () => void): () => void {
    return this.pushes.onAnyChange(listener);
  }

  /** Pushes the latest counts (none while a partition is moving) to the instance's subscribers. */
  private schedulePush(instanceId: string, tenantId = this.board.get(instanceId)?.tenantId): void {
    if (tenantId) this.pushes.changed(instanceId, () => this.clusterCounts(tenantId, instanceId));
  }

  // ---- reads the engine answers ----------------------------------------------------------------------------------

  async stepBitmap(tenantId: string, instanceId: string, step: string, users: StepUsers = 'in', group?: HoldoutGroup): Promise<RoaringBitmap32> {
    return RoaringBitmap32.deserialize(await this.call('stepBitmap', tenantId, instanceId, step, users, group), 'portable');
  }

  readonly whereIsUser = this.forward('whereIsUser');
  readonly previewPath = this.forward('previewPath');

  // ---- profiles: the engine thread holds the index; this thread keeps no copy ------------------------------------

  readonly profiles: ProfileCalls = {
    importProfiles: (tenantId, body, format, columnTypes = null) => this.importProfiles(tenantId, body, format, columnTypes),
    upsertProfiles: this.forward('upsertProfiles'),
    deleteProfile: this.forward('deleteProfile'),
    estimateAudience: this.forward('estimateAudience'),
    explainWorkflow: this.forward('explainWorkflow'),
    profileFields: this.forward('profileFields'),
    describeProfileColumns: this.forward('describeProfileColumns'),
    readProfileColumns: this.forward('readProfileColumns'),
    quietZoneGroups: this.forward('quietZoneGroups'),
  };

  /**
   * The engine thread parses the body, writes its chunks and applies them to its index; this thread only hands it the
   * body's bytes as they come (server/engine/profile-import-stream.ts), so other requests are answered meanwhile.
   */
  private async importProfiles(
    tenantId: string,
    body: ReadableStream<Uint8Array> | null,
    format: ImportFormat,
    columnTypes: string | null,
  ): Promise<ImportResult> {
    // The body's pieces are posted as they are read: the thread must be ready for the call that precedes them.
    if (!this.ready && this.starting) await this.starting;
    const id = this.nextImportId++;
    const sender = new ImportBodySender(id, (message, transfer) => this.post(message, transfer));
    this.imports.set(id, sender);
    // The call goes first: the engine thread is ready for the body's pieces that follow it on the same port.
    const answer = this.call('importProfiles', id, tenantId, body !== null, format, columnTypes);
    const sent = body ? sender.send(body) : Promise.resolve();
    try {
      return await answer;
    } catch (error) {
      if (error instanceof AppError) throw error;
      if (sender.failure) throw sender.failure; // the body broke off (the client went away): as when read in this thread
      // The engine thread ended (it is started again): the chunks it committed stay, with an index that agrees.
      console.error('[crowdflow] profile import not finished by the engine thread:', error);
      throw new AppError('unavailable', 'The engine stopped during the import; chunks committed before it stay: import the file again', {
        retryAfterSeconds: 1,
      });
    } finally {
      sender.finish();
      this.imports.delete(id);
      await sent;
    }
  }

  // ---- reads of the database ---------------------------------------------------------------------------------------

  listInstances(tenantId: string, filter: { workflowId?: string; state?: string } = {}): Promise<InstanceView[]> {
    return ops.listInstances(this.database, tenantId, filter);
  }

  getInstance(tenantId: string, instanceId: string): Promise<InstanceView> {
    return ops.getInstance(this.database, tenantId, instanceId);
  }

  getSnapshot(tenantId: string, instanceId: string): Promise<SnapshotView> {
    return ops.getSnapshot(this.database, tenantId, instanceId);
  }

  // ---- instance operations: checked and submitted here, done by the engine --------------------------------------

  startInstance(tenantId: string, workflowId: string, request: StartRequest): Promise<SubmittedOperation> {
    return ops.submitStart(this, tenantId, workflowId, request);
  }

  stopInstance(tenantId: string, instanceId: string): Promise<SubmittedOperation> {
    return ops.submitStop(this, tenantId, instanceId);
  }

  updateInstanceCrowd(tenantId: string, instanceId: string, request: { crowd: string }): Promise<SubmittedOperation> {
    return ops.submitUpdateCrowd(this, tenantId, instanceId, request);
  }

  updateInstanceWorkflow(tenantId: string, instanceId: string, request: UpdateWorkflowRequest): Promise<SubmittedOperation> {
    return ops.submitUpdateWorkflow(this, tenantId, instanceId, request);
  }

  sendToWinner(tenantId: string, instanceId: string, request: WinnerRequest, now: number): Promise<SubmittedOperation> {
    return submitWinner(this, tenantId, instanceId, request, 'manual', now);
  }

  readonly materializeStart = this.forward('materializeStart');

  async materializeStop(tenantId: string, instanceId: string): Promise<Json> {
    const output = await this.call('materializeStop', tenantId, instanceId);
    this.board.delete(instanceId); // stopped: its counts are the snapshot's from now on
    return output;
  }

  readonly materializeUpdateCrowd = this.forward('materializeUpdateCrowd');
  readonly materializeUpdateWorkflow = this.forward('materializeUpdateWorkflow');
}
