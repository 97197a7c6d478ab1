import { dueWinners, registerWinnerProcedure, submitWinner, type WinnerRequest } from './experiments';
import { sleepUntilAborted, systemClock, type Clock } from '../clock';
import type { Principal } from '../auth';
import { processOwner } from '../process-owner';
import type { RoaringBitmap32 } from '../crowd/bitmap';
import type { Database } from '../storage/database';
import { onTenantDeleted } from '../tenants/changes';
import { FairTurns } from './slices';
import { CheckpointSchedule } from './checkpoint-schedule';
import { CommitGroup } from './commit-group';
import { CountsPublisher, type PublishCounts } from './counts-publisher';
import { PartitionWorker } from './partition';
import type { EngineSide } from './engine-side';
import type { IngestState } from './ingest-state';
import { logEnds } from '../storage/event-log';
import * as reads from './reads';
import { previewPath, type PathPreview, type PreviewRequest } from './preview';
import { CountsPushes } from './counts-pushes';
import { TimerLoop } from './timer-loop';
import { LoadedTenants } from './loaded-tenants';
import { LeaseKeeper } from './lease-keeper';
import { type InstanceRuntime, shardCounts, type TenantRuntime } from './tenant';
import type { SampledInstance } from './counts-history';
import type { CommittedShards } from './committed-cache';
import type { ClusterMembership } from './cluster-port';
import { appendPrepared, prepareIngestBody, type IngestOutcome, type PreparedIngest } from './ingest';
import * as ops from './instances';
import { PARTITION_WAIT_MS, START_COMMIT_BYTES } from './operations';
import type { InstanceEngine } from './instances';
import type { EngineHandle } from './handle';
import { materializeStart, materializeStop, materializeUpdateCrowd, materializeUpdateWorkflow } from './operations';
import type { Json, ProcedureRunner } from '../procedures/types';
import type { LeasePolicy } from '../storage/journal/leases';
import { profileCalls, type ProfileCalls } from '../profiles/calls';
import type {
  Counts,
  CountsListener,
  InstanceView,
  SnapshotView,
  StartRequest,
  StepUsers,
  HoldoutGroup,
  SubmittedOperation,
  UpdateWorkflowRequest,
  WhereIsUser,
} from './types';

export interface EngineOptions {
  /** The storage its partitions, shards and operations live in. */
  database: Database;
  /** Its app's ingest state: the engine appends through it, its partition loops take the rows it remembers. */
  ingestState: IngestState;
  /** Journey time (timers, delays, event times); the system clock by default. */
  clock?: Clock;
  /** Wall time for leases, retries and checkpoint cadence, which other processes see; the system clock by default. */
  wallClock?: Clock;
  /** Lease owner name; a process restarting under the same name takes its partitions back at once. */
  owner?: string;
  runner: ProcedureRunner;
  leaseMs?: number;
  checkpointEveryMs?: number;
  /** When every move since a partition's checkpoint is a bulk move: 10 minutes by default (partition.ts). */
  bulkCheckpointEveryMs?: number;
  /** Moves after which a partition writes a checkpoint, or more after a big one (partition.ts checkpointMovesAfter):
   * 100,000 by default. */
  checkpointEveryMoves?: number;
  /** How long an operation waits for partitions this process does not own yet before failing. Default 2 minutes. */
  partitionWaitMs?: number;
  /** Bytes of bitmaps a start commits per transaction (operations.ts, START_COMMIT_BYTES by default). */
  startCommitBytes?: number;
  /** Told the counts of an instance right after every change (the engine thread publishes them to the request thread). */
  publishCounts?: PublishCounts;
  /** Membership of a cluster on PostgreSQL (server/cluster/): this engine holds only its share of the partitions. */
  cluster?: ClusterMembership;
}

/** One engine per process: partition owner loops, shards in memory, timers, counts. */
export class Engine implements EngineSide, EngineHandle, InstanceEngine {
  readonly clock: Clock;
  readonly wallClock: Clock;
  readonly database: Database;
  readonly ingestState: IngestState;
  readonly commits: CommitGroup;
  readonly checkpointSchedule: CheckpointSchedule;
  /** The thread's turns between slices of long work, shared round-robin by the tenants with work waiting. */
  readonly turns = new FairTurns();
  readonly owner: string;
  readonly leaseMs: number;
  readonly checkpointEveryMs: number;
  readonly bulkCheckpointEveryMs: number;
  readonly checkpointEveryMoves: number;
  readonly partitionWaitMs: number;
  readonly startCommitBytes: number;
  readonly runner: ProcedureRunner;
  private readonly countsPublisher: CountsPublisher | undefined;
  readonly cluster: ClusterMembership | undefined;
  /** Profile writes and index reads, on this thread's profile index (the one conditions read). */
  readonly profiles: ProfileCalls;
  private readonly tenants: LoadedTenants;
  private readonly pushes = new CountsPushes();
  private readonly stopRequested = new Set<string>();
  private readonly timers: TimerLoop;
  private readonly leases: LeaseKeeper;
  private running = false;
  private unsubscribeTenantDeleted: (() => void) | undefined;

  constructor(options: EngineOptions) {
    this.clock = options.clock ?? systemClock;
    this.wallClock = options.wallClock ?? systemClock;
    this.database = options.database;
    this.ingestState = options.ingestState;
    this.profiles = profileCalls(this.database, this.turns);
    this.commits = new CommitGroup(this.database);
    this.checkpointSchedule = new CheckpointSchedule(this.wallClock);
    this.tenants = new LoadedTenants({
      database: this.database,
      turns: this.turns,
      isRunning: () => this.running,
      partitionWorker: (runtime, partition) => new PartitionWorker(this, runtime, partition),
      tenantLoaded: (tenantId, loaded) => {
        // Shards installed while the tenant loaded could not be published (findRuntime needs it loaded): publish them
        // now, or a restarted cluster member would leave the others reading its predecessor's figures.
        for (const instanceId of loaded.runtime.instances.keys()) this.countsChanged(instanceId);
        this.timersChanged(tenantId); // its partitions' leases may have been taken (and woken the loop) before it counted as loaded
        this.instancesChanged();
      },
    });
    this.timers = new TimerLoop({
      clock: this.clock,
      database: this.database,
      // Loaded tenants only: one still rebuilding its shards must not hold up the others' timers (its load wakes the loop).
      tenants: async () => this.tenants.allLoadedNow().map(([, loaded]) => loaded),
      loadedTenant: (id) => this.tenants.loaded(id),
      recovered: () => this.tenants.allLoaded(),
      sampledInstances: () => this.sampledInstances(),
      countsSampled: (instanceId, counts, now) => this.decideExperiments(instanceId, counts, now),
    });
    this.owner = options.owner ?? processOwner();
    this.leases = new LeaseKeeper(this);
    this.runner = options.runner;
    this.countsPublisher = options.publishCounts && new CountsPublisher(options.publishCounts, (id, tenantId) => this.findRuntime(id, tenantId));
    this.cluster = options.cluster;
    this.leaseMs = options.leaseMs ?? 15_000;
    this.checkpointEveryMs = options.checkpointEveryMs ?? 5_000;
    this.bulkCheckpointEveryMs = options.bulkCheckpointEveryMs ?? 10 * 60_000;
    this.checkpointEveryMoves = options.checkpointEveryMoves ?? 100_000;
    this.partitionWaitMs = options.partitionWaitMs ?? PARTITION_WAIT_MS;
    this.startCommitBytes = options.startCommitBytes ?? START_COMMIT_BYTES;
    // Registered before any start so the runner (which may resume instance procedures at boot) knows the types.
    ops.registerInstanceProcedures(this);
    registerWinnerProcedure(this);
  }

  /** In a cluster: the shards of partitions other members hold, kept for reads (./committed-cache.ts). */
  get committed(): CommittedShards | undefined {
    return this.cluster?.committed;
  }

  get leasePolicy(): LeasePolicy | undefined {
    return this.cluster;
  }

  /**
   * Starts the timers and the lease keeper, and loads the tenants in the background (their partitions taken, their
   * shards rebuilt), so a server with a lot of state answers at once: reads of a tenant still loading answer 503
   * `partition_recovering` (its load is brought forward), events are logged as usual and applied once it is loaded.
   */
  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    this.unsubscribeTenantDeleted = onTenantDeleted(this.database, (tenantId) => void this.forgetTenant(tenantId));
    await this.cluster?.start(this);
    this.leases.start();
    this.checkpointSchedule.start();
    // Listed before start returns, so a read that follows is told the tenant is loading instead of waiting for it.
    await this.tenants.loadAllInBackground();
    this.timers.start(); // after the listing: its housekeeping waits for these loads (TimerHost.recovered)
    await ops.resumeInterruptedOperations(this);
  }

  /** Resolves once every tenant that existed at start is loaded (tests and the bench wait for it). */
  async loaded(): Promise<void> {
    await this.tenants.allLoaded();
  }

  /**
   * Whether a read of the tenant's live state must wait for its partitions to load (after a restart): then it is
   * answered 503 `partition_recovering` at once and the tenant's load is brought forward, instead of a request hanging.
   */
  isRecovering(tenantId: string): boolean {
    return this.tenants.isRecovering(tenantId);
  }

  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    await this.tenants.allLoaded();
    await this.cluster?.drain();
    this.unsubscribeTenantDeleted?.();
    await this.timers.stop();
    await this.leases.stop();
    await this.checkpointSchedule.stop();
    await this.tenants.stopAll();
    this.pushes.clear();
    await this.cluster?.leave();
  }

  /** A deleted tenant: its partition loops end without writing anything more (its rows went with it). */
  forgetTenant(tenantId: string): Promise<void> {
    return this.tenants.forget(tenantId);
  }

  /** Whether this engine runs partition loops for the tenant (false once a deleted tenant's loops have ended). */
  hasTenant(tenantId: string): boolean {
    return this.tenants.has(tenantId);
  }

  /** The tenant's runtime: its running instances loaded and one owner loop per partition started. */
  async tenant(tenantId: string): Promise<TenantRuntime> {
    return (await this.tenants.load(tenantId)).runtime;
  }

  async workers(tenantId: string): Promise<PartitionWorker[]> {
    return (await this.tenants.load(tenantId)).workers;
  }

  leaseHeld(worker: PartitionWorker, held: boolean): void {
    this.leases.track(worker, held);
  }

  /** The tenants loaded so far, with their partition loops. */
  loadedTenants(): [string, PartitionWorker[]][] {
    return this.tenants.allLoadedNow().map(([id, loaded]) => [id, loaded.workers]);
  }

  /**
   * Before a tenant-wide instance operation: in a cluster, brings the tenant's partitions to this engine and returns
   * how to let them go again; alone, there is nothing to bring.
   */
  async gatherPartitions(tenantId: string): Promise<() => Promise<void>> {
    if (!this.cluster) return async () => undefined;
    return this.cluster.gather(tenantId, await this.workers(tenantId));
  }

  /** Ingest calls this after appending events so the partition loops read them at once. */
  wakeTenant(tenantId: string): void {
    if (!this.running) return;
    void this.workers(tenantId).then(
      (workers) => workers.forEach((w) => w.poke()),
      () => undefined,
    );
  }

  async ingestBody(principal: Principal, body: Uint8Array, now: number, key?: string): Promise<IngestOutcome> {
    return this.ingestPrepared(await prepareIngestBody(this.database, this.ingestState, principal, body, now, key), now);
  }

  /** Appends a request the request thread decoded and encoded (server/engine/ingest.ts), and wakes its partitions. */
  async ingestPrepared(prepared: PreparedIngest, now: number): Promise<IngestOutcome> {
    const outcome = await appendPrepared(this.database, this.ingestState, prepared, now);
    if (outcome.replayed) return outcome;
    this.wakeTenant(outcome.tenantId);
    this.cluster?.eventsAppended(outcome.tenantId);
    return outcome;
  }

  /** Resolves once every partition of the tenant applied the log as far as it reached when called. */
  async drain(tenantId: string, timeoutMs = 60_000): Promise<void> {
    const ends = await logEnds(this.database, tenantId);
    const workers = await this.workers(tenantId);
    const deadline = this.wallClock.now() + timeoutMs;
    for (const worker of workers) {
      const end = ends.get(worker.partition) ?? 0;
      for (;;) {
        const progressed = worker.progressed.signal();
        if (worker.lease && worker.offset >= end) break;
        if (this.wallClock.now() > deadline) throw new Error(`partition ${worker.partition} did not reach offset ${end} (at ${worker.offset})`);
        worker.poke();
        // Woken by the worker's commit or lease; poked again meanwhile (a lease another process held may be free now).
        await sleepUntilAborted(this.wallClock, DRAIN_POKE_MS, progressed);
      }
    }
  }

  // ---- timers -------------------------------------------------------------------------------------------------

  timersChanged(tenantId?: string): void {
    this.timers.wake(tenantId);
  }

  /** Instances to sample may be new here (see TimerLoop.instancesChanged). */
  instancesChanged(): void {
    this.timers.instancesChanged();
  }

  /** Runs every due timer now, then samples counts where due (the loop does this by itself; tests call it after moving a ManualClock). */
  runTimers(): Promise<void> {
    return this.timers.runDue();
  }

  /** Resolves once the counts sampler sleeps until a later time of the engine clock (tests, after moving a ManualClock). */
  countsSamplerSettled(): Promise<void> {
    return this.timers.samplerSettled();
  }

  /**
   * The instances this process samples the counts history of: alone, those of tenants whose every partition it holds
   * (their counts here are whole); in a cluster, the member's share (server/cluster/member.ts).
   */
  private sampledInstances(): SampledInstance[] {
    if (this.cluster) return this.cluster.sampledInstances();
    return this.tenants.allLoadedNow().flatMap(([, loaded]) => (loaded.workers.every((w) => w.lease) ? [...loaded.runtime.instances.values()] : []));
  }

  isStopRequested(instanceId: string): boolean {
    return this.stopRequested.has(instanceId);
  }

  /** History snapshots are kept 7 days (their expiresAt); the timer loop removes expired ones hourly. */
  removeExpiredSnapshots(now: number): Promise<number> {
    return this.timers.removeExpiredSnapshots(now);
  }

  requestStop(instance: InstanceRuntime): void {
    if (this.stopRequested.has(instance.id)) return;
    this.stopRequested.add(instance.id);
    const { tenantId, id } = instance.record;
    this.runner
      .submit(
        'instance.stop',
        { tenantId, instanceId: id, workflowId: instance.record.workflowId },
        { id: `instance.stop:${id}:stopAt`, tenantId, workflowId: instance.record.workflowId },
      )
      .catch((error) => {
        this.stopRequested.delete(id);
        console.error(`[crowdflow] could not stop instance ${id} at its stopAt`, error);
      });
  }

  // ---- counts -------------------------------------------------------------------------------------------------

  /** `tenantId`, when the caller knows it, spares a scan of every tenant (a minute's firing of 1,000 tenants calls this 8,000 times). */
  countsChanged(instanceId: string, tenantId?: string): void {
    this.countsPublisher?.countsChanged(instanceId, tenantId);
    const instance = this.cluster && this.findRuntime(instanceId, tenantId);
    if (instance) this.cluster!.counts.schedule(instance.record.tenantId, instanceId, () => this.heldFigures(instance.record.tenantId, instanceId));
    this.pushes.changed(instanceId, () => this.findRuntime(instanceId, tenantId)?.counts());
  }

  /** The counts of each partition of the instance this engine holds, with its lease epoch (for the other members). */
  private heldFigures(tenantId: string, instanceId: string): { partition: number; epoch: number; counts: Counts }[] {
    const instance = this.findRuntime(instanceId);
    const workers = this.tenants.loaded(tenantId)?.workers ?? [];
    if (!instance) return [];
    return workers.flatMap((worker) => {
      const counts = worker.lease ? shardCounts(instance, worker.partition) : null;
      return counts ? [{ partition: worker.partition, epoch: worker.lease!.epoch, counts }] : [];
    });
  }

  /** Called after committed changes of the instance's counts (at most one push per 100 ms). */
  subscribeCounts(instanceId: string, listener: CountsListener): () => void {
    return this.pushes.subscribe(instanceId, listener);
  }
  onCountsChanged(listener: () => void): () => void {
    return this.pushes.onAnyChange(listener);
  }

  liveUserCount(instanceId: string): number | undefined {
    return this.findRuntime(instanceId)?.counts().total;
  }

  /** The live instance, looked for in `tenantId` first when given, then in every loaded tenant. */
  findRuntime(instanceId: string, tenantId?: string): InstanceRuntime | undefined {
    return this.tenants.findInstance(instanceId, tenantId);
  }

  // ---- queries ------------------------------------------------------------------------------------------------

  listInstances(tenantId: string, filter: { workflowId?: string; state?: string } = {}): Promise<InstanceView[]> {
    return ops.listInstances(this.database, tenantId, filter);
  }

  getInstance(tenantId: string, instanceId: string): Promise<InstanceView> {
    return ops.getInstance(this.database, tenantId, instanceId);
  }

  /** Live counts of a running instance; a stopped instance answers with its snapshot counts. */
  getCounts(tenantId: string, instanceId: string): Promise<Counts> {
    return reads.getCounts(this, tenantId, instanceId);
  }

  /** The users at `step` of a running instance or the snapshot of a stopped one (`users: converted`: who reached the goal from it). */
  stepBitmap(tenantId: string, instanceId: string, step: string, users: StepUsers = 'in', group?: HoldoutGroup): Promise<RoaringBitmap32> {
    return reads.stepBitmap(this, tenantId, instanceId, step, users, group);
  }

  getSnapshot(tenantId: string, instanceId: string): Promise<SnapshotView> {
    return ops.getSnapshot(this.database, tenantId, instanceId);
  }

  whereIsUser(tenantId: string, user: number): Promise<WhereIsUser> {
    return reads.whereIsUser(this, tenantId, user);
  }

  /** The way one user would go through the workflow now (server/engine/preview.ts); moves no one. */
  previewPath(tenantId: string, workflowId: string, request: PreviewRequest): Promise<PathPreview> {
    return previewPath(this, tenantId, workflowId, request);
  }

  // ---- instance operations (each runs as a procedure) ---------------------------------------------------------

  async liveCounts(tenantId: string, instanceId: string): Promise<Counts | undefined> {
    return (await this.tenant(tenantId)).instances.get(instanceId)?.counts();
  }

  materializeStart(tenantId: string, instanceId: string): Promise<Json> {
    return materializeStart(this, tenantId, instanceId);
  }

  async materializeStop(tenantId: string, instanceId: string): Promise<Json> {
    const output = await materializeStop(this, tenantId, instanceId);
    this.cluster?.counts.schedule(tenantId, instanceId, () => null); // its figures go: counts come from the snapshot now
    return output;
  }

  materializeUpdateCrowd(tenantId: string, instanceId: string, crowd: string): Promise<Json> {
    return materializeUpdateCrowd(this, tenantId, instanceId, crowd);
  }

  materializeUpdateWorkflow(tenantId: string, instanceId: string, version: number, mapping: Record<string, string>): Promise<Json> {
    return materializeUpdateWorkflow(this, tenantId, instanceId, version, mapping);
  }

  /** Refuses an empty crowd, an invalid workflow or a running instance at once; the rest runs as `instance.start`. */
  startInstance(tenantId: string, workflowId: string, request: StartRequest): Promise<SubmittedOperation> {
    return ops.submitStart(this, tenantId, workflowId, request);
  }

  stopInstance(tenantId: string, instanceId: string): Promise<SubmittedOperation> {
    return ops.submitStop(this, tenantId, instanceId);
  }

  updateInstanceCrowd(tenantId: string, instanceId: string, request: { crowd: string }): Promise<SubmittedOperation> {
    return ops.submitUpdateCrowd(this, tenantId, instanceId, request);
  }

  /** 409 with details.stranded {step: count} when users of removed steps are not mapped. */
  updateInstanceWorkflow(tenantId: string, instanceId: string, request: UpdateWorkflowRequest): Promise<SubmittedOperation> {
    return ops.submitUpdateWorkflow(this, tenantId, instanceId, request);
  }

  sendToWinner(tenantId: string, instanceId: string, request: WinnerRequest, now: number): Promise<SubmittedOperation> {
    return submitWinner(this, tenantId, instanceId, request, 'manual', now);
  }

  /** With each counts sample: experiments whose automatic rule now picks a winner send the rest to it (./experiments.ts). */
  private async decideExperiments(instanceId: string, counts: Counts, now: number): Promise<void> {
    const instance = this.findRuntime(instanceId);
    if (!instance) return;
    for (const { by, ...request } of dueWinners(instance.workflow, counts, now)) {
      await submitWinner(this, instance.record.tenantId, instanceId, request, by, now).catch((error) =>
        console.error(`[crowdflow] could not send the rest of experiment "${request.step}" of instance ${instanceId} to "${request.path}"`, error),
      );
    }
  }
}

/** How often drain() pokes a partition that has not caught up yet, in wall-clock time. */
const DRAIN_POKE_MS = 5;
