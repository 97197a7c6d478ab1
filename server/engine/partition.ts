// The owner loop of one tenant partition: hold the lease, read the log in offset order, apply each event to every
// running instance, commit the moves and the new offset in one fenced transaction, then publish counts. The
// partition's timers (timers.ts) run under the same lock. The loop runs only when there is work: it sleeps on the
// engine clock until it is poked (events appended, an instance started, the cluster gave it the partition); the
// engine's CheckpointSchedule hands it its checkpoint when due and its LeaseKeeper renews its lease. An idle partition
// reads nothing and holds no timer.
import type { ConditionEvent } from '../conditions/compile';
import { profileKeysOfAll } from '../conditions/profile-predicate';
import { Wakeup } from '../clock';
import { RoaringBitmap32 } from '../crowd/bitmap';
import type { CheckpointDue } from './checkpoint-schedule';
import { DeadLetterBatch } from './dead-letter';
import { enterByEvents } from './entry';
import { entryRouting } from './entry-routing';
import { ExitWatch } from './exit';
import { GoalTracker } from './goal';
import type { ConversionWrite } from '../storage/journal/conversions';
import { Mover } from './moves';
import type { JournalMove } from '../storage/journal/commit';
import { acquireLease, LeaseLostError, releaseLease, type Lease } from '../storage/journal/leases';
import { readLog, type LogRow } from './log';
import type { EngineSide } from './engine-side';
import type { Shard } from './shard';
import { syncRunningInstances } from './instances-sync';
import type { InstanceRuntime, Mutex, TenantRuntime } from './tenant';

/** Log rows read per batch (each row is one ingested batch of up to 10,000 events for this partition). */
const ROWS_PER_BATCH = 32;

export class PartitionWorker implements CheckpointDue {
  private held: Lease | null = null;
  offset = 0;
  private readonly wakeup = new Wakeup();
  /** Woken when the worker takes its lease or commits a batch (Engine.drain waits on it). */
  readonly progressed = new Wakeup();
  private stopped = false;
  private loop: Promise<void> | undefined;
  private movesSinceCheckpoint = 0;
  /** Bytes of this partition's last checkpoint: a bigger one is written after more moves (checkpointMovesAfter). */
  private lastCheckpointBytes = 0;
  /** Whether a move since the last checkpoint is of a single user (its checkpoint then comes due sooner). */
  private singleMovesSinceCheckpoint = false;
  /** Wall time of the first move since the last checkpoint: the checkpoint is due a checkpoint interval after it. */
  private uncheckpointedSince = 0;
  readonly lock: Mutex;
  private firstAttemptDone!: () => void;
  /** Settles after the first try to take the lease (and rebuild the shards when it was taken). */
  readonly firstAttempt = new Promise<void>((resolve) => (this.firstAttemptDone = resolve));

  constructor(
    readonly engine: EngineSide,
    readonly tenant: TenantRuntime,
    readonly partition: number,
  ) {
    this.lock = tenant.locks[partition];
  }

  /** The partition's lease while this process holds it: the engine's LeaseKeeper renews it. */
  get lease(): Lease | null {
    return this.held;
  }

  private hold(lease: Lease | null): void {
    this.held = lease;
    this.engine.leaseHeld(this, lease !== null);
  }

  start(): void {
    this.loop ??= this.run();
  }

  /**
   * Ends the loop, checkpoints and hands the lease back, so another process takes the partition at once. Without
   * `handBack` (the tenant was deleted: its lease row and shards are gone with it) the loop just ends.
   */
  async stop(handBack = true): Promise<void> {
    this.stopped = true;
    this.poke();
    await this.loop;
    this.engine.checkpointSchedule.cancel(this);
    if (!handBack) return this.hold(null);
    // A clean stop leaves nothing to replay: the next owner starts from these checkpoints.
    await this.checkpointIfDue(true).catch(() => undefined);
    const lease = this.lease;
    this.hold(null);
    if (lease) await releaseLease(this.engine.database, lease).catch(() => undefined);
  }

  /**
   * A planned handoff (the cluster gives the partition to another member): a last checkpoint, then the lease is
   * handed back and the shards dropped, so the next owner starts at once from that checkpoint. The loop stays, ready
   * to take the partition again when it is given back.
   */
  async handOff(): Promise<void> {
    await this.checkpointIfDue(true);
    await this.lock.run(async () => {
      const lease = this.lease;
      if (!lease) return;
      this.hold(null);
      this.dropShards();
      await releaseLease(this.engine.database, lease);
    });
  }

  /** Whether this engine should hold the partition: always when alone, its share of it in a cluster. */
  shouldHold(): boolean {
    const policy = this.engine.leasePolicy;
    return !policy || policy.mayOwn(this.tenant.id, this.partition);
  }

  /** The partition is no longer ours: its counts leave this process's figures at once. */
  private dropShards(): void {
    for (const instance of this.tenant.instances.values()) {
      instance.shards[this.partition] = undefined;
      this.engine.countsChanged(instance.id, instance.record.tenantId);
    }
  }

  /** New events (or a new instance): read the log now instead of at the next poll. */
  poke(): void {
    this.wakeup.wake();
  }

  private async run(): Promise<void> {
    const clock = this.engine.wallClock;
    while (!this.stopped) {
      const signal = this.wakeup.signal();
      try {
        if (!this.lease) {
          const acquired = await this.acquire().finally(() => this.firstAttemptDone());
          if (acquired === 'not-ours')
            await clock.sleep(Number.POSITIVE_INFINITY, signal); // the cluster pokes when it is
          else if (acquired === 'held') await clock.sleep(this.engine.leaseMs / 2, signal); // until its lease expires
          continue;
        }
        const rows = await readLog(this.engine.database, this.engine.ingestState.recentLog, this.tenant.id, this.partition, this.offset, ROWS_PER_BATCH);
        if (rows.length > 0) {
          await this.lock.run(() => this.applyRows(rows));
          await this.checkpointIfDue(); // also under continuous load, so recovery never replays too much
          continue;
        }
        // Nothing to read: asleep until poked (events appended, an instance, the cluster). A timer's or an operation's
        // moves append nothing, so they do not poke (a minute's firing over 1,000 tenants would read 8,000 empty logs).
        await clock.sleep(Number.POSITIVE_INFINITY, signal);
      } catch (error) {
        if (this.stopped) return;
        await this.recoverFrom(error);
        await clock.sleep(1_000, signal);
      }
    }
  }

  /** The CheckpointSchedule's call: the checkpoint planned after the first uncheckpointed move is due. */
  checkpointDue(): void {
    void this.checkpointIfDue().catch((error: unknown) => {
      if (this.stopped) return;
      void this.recoverFrom(error).then(() => this.poke());
    });
  }

  /** When the checkpoint of the moves since the last one is due (wall clock). */
  private checkpointDueAt(): number {
    return this.uncheckpointedSince + (this.singleMovesSinceCheckpoint ? this.engine.checkpointEveryMs : this.engine.bulkCheckpointEveryMs);
  }

  private planCheckpoint(): void {
    if (this.movesSinceCheckpoint > 0) this.engine.checkpointSchedule.plan(this, this.checkpointDueAt());
  }

  /** The LeaseKeeper found the lease taken over or expired: stop writing the partition, then try to take it again. */
  leaseLost(lease: Lease): void {
    void this.recoverFrom(new LeaseLostError(lease)).then(() => this.poke());
  }

  /**
   * Takes the lease and rebuilds this partition's shard of every running instance. Says why not when it cannot: the
   * cluster gives the partition to another member, or another process holds its lease.
   */
  private async acquire(): Promise<'taken' | 'not-ours' | 'held'> {
    const policy = this.engine.leasePolicy;
    if (!this.shouldHold()) return 'not-ours';
    // Partitions taken together (at boot, every partition of the tenant) rebuild their shards from one journal pass.
    const leaseRead = this.tenant.shardLoader.taking();
    const taken = await acquireLease(
      this.engine.database,
      this.tenant.id,
      this.partition,
      this.engine.owner,
      this.engine.wallClock.now(),
      this.engine.leaseMs,
      policy,
    ).finally(leaseRead);
    if (!taken) return 'held';
    await this.lock.run(async () => {
      this.hold(taken.lease);
      this.offset = taken.offset;
      // Shared with other members: instances may have started or stopped there meanwhile.
      if (policy) await syncRunningInstances(this.tenant);
      const instances = [...this.tenant.instances.values()];
      const shards = await Promise.all(instances.map((instance) => this.tenant.shardLoader.load(instance.id, this.partition, instance.workflow)));
      shards.forEach((shard, i) => this.installShard(instances[i], shard));
    });
    this.progressed.wake();
    this.engine.timersChanged(this.tenant.id);
    this.engine.instancesChanged();
    this.planCheckpoint(); // moves of an earlier hold not checkpointed yet
    return 'taken';
  }

  private installShard(instance: InstanceRuntime, shard: Shard): void {
    instance.shards[this.partition] = shard;
    instance.rebuilding.delete(this.partition);
    this.engine.countsChanged(instance.id, instance.record.tenantId);
  }

  /** After a failed commit the in-memory shards may be ahead of the database: drop them and rebuild from it. */
  private async recoverFrom(error: unknown): Promise<void> {
    if (error instanceof LeaseLostError) {
      console.warn(`[crowdflow] ${error.message}; partition released`);
      await this.lock.run(async () => {
        this.hold(null);
        this.dropShards();
      });
      return;
    }
    console.error(`[crowdflow] partition ${this.partition} of tenant ${this.tenant.id} failed; rebuilding it from its checkpoint and journal`, error);
    await this.lock.run(async () => {
      this.hold(null); // re-acquiring re-reads the committed offset and rebuilds the shards
    });
    this.planCheckpoint(); // a failed checkpoint is tried again
  }

  private async applyRows(rows: LogRow[]): Promise<void> {
    if (!this.lease) return;
    // Shared with other members: an instance another member started since this partition was taken has no shard here yet.
    if (this.engine.leasePolicy) {
      for (const instance of this.tenant.instances.values()) {
        if (!instance.shards[this.partition]) this.installShard(instance, await this.tenant.shardLoader.load(instance.id, this.partition, instance.workflow));
      }
    }
    const now = this.engine.clock.now();
    const events = rows.length === 1 ? rows[0].events : concatEvents(rows);
    const moves: JournalMove[] = [];
    const touched: InstanceRuntime[] = [];
    const letters = new DeadLetterBatch(this.partition, rows);
    const conversions: ConversionWrite[] = [];
    for (const instance of this.tenant.instances.values()) {
      const before = moves.length + conversions.length;
      await this.applyEvents(instance, events, now, moves, letters, conversions);
      if (moves.length + conversions.length > before) touched.push(instance);
    }
    const to = rows[rows.length - 1].offset;
    await this.engine.commits.commit(this.tenant.id, {
      leases: [this.lease],
      offsets: { from: this.offset, to },
      moves,
      now,
      deadLetters: letters.writes(),
      conversions,
    });
    this.offset = to;
    this.progressed.wake();
    this.afterCommit(touched, moves, conversions.length);
  }

  /**
   * Lets trigger events' users in (entry.ts), finds the batch's users in the instance's event steps with one AND per
   * step and those the goal and the exit criteria watch (goal.ts, exit.ts), then runs events in order.
   */
  private async applyEvents(
    instance: InstanceRuntime,
    events: LogRow['events'],
    now: number,
    moves: JournalMove[],
    letters: DeadLetterBatch,
    conversions: ConversionWrite[],
  ): Promise<void> {
    const shard = instance.shards[this.partition];
    const workflow = instance.workflow;
    if (!shard || (workflow.eventSteps.length === 0 && !workflow.trigger && !workflow.goal && !workflow.exit)) return;
    await this.tenant.data.prepareCrowds(workflow.crowdsUsed());
    const mover = new Mover(workflow, shard, moves, now, await entryRouting(this.tenant.data, workflow));
    const enteredAt = await enterByEvents(mover, events, this.tenant.data, letters);
    const ids = new Uint32Array(events.length);
    for (let i = 0; i < events.length; i++) ids[i] = events[i].user;
    const batch = RoaringBitmap32.from(ids);
    const goal = await GoalTracker.watch(workflow, shard, batch, this.tenant.data, letters, now);
    const exit = await ExitWatch.watch(mover, batch, this.tenant.data, letters);
    const where = new Map<number, string>();
    for (const step of workflow.eventSteps) {
      const bitmap = shard.steps.get(step);
      if (!bitmap || bitmap.size === 0) continue;
      for (const user of RoaringBitmap32.and(batch, bitmap).toUint32Array()) where.set(user, step);
    }
    if (where.size === 0 && !goal && !exit) return;
    const profiles =
      where.size > 0 && workflow.usesProfiles() ? await this.tenant.data.profilesOf(where.keys(), profileKeysOfAll(branchConditionTexts(workflow))) : null;
    const membership = this.tenant.data.membership;
    // Conditions over a batch of up to 320,000 events (costly regexes included) must not hold the thread others share.
    const slices = this.tenant.slices();
    for (let e = 0; e < events.length; e++) {
      if (slices.due) await slices.boundary();
      const event = events[e];
      if (enteredAt.size > 0 && e <= (enteredAt.get(event.user) ?? -1)) continue; // before (or the event of) their entry
      goal?.check(event, e); // before the event moves them: they convert from where it found them
      if (exit?.check(event, e)) {
        // Out of the journey: their later events of the batch neither move nor convert them.
        where.delete(event.user);
        goal?.left(event.user);
        continue;
      }
      const step = where.get(event.user);
      if (step === undefined) continue;
      const runtime = workflow.get(step);
      if (runtime.step.kind !== 'branch') continue;
      const input = { user: event.user, now, event: event as ConditionEvent, profile: profiles?.get(event.user) };
      const i = letters.firstBranch(runtime.conditions, input, membership, { instanceId: instance.id, step, index: e });
      if (i < 0) continue;
      const rest = mover.moveUser(event.user, step, runtime.step.branches[i].next);
      goal?.moved(event.user, rest);
      exit?.moved(event.user, rest);
      if (workflow.get(rest).step.kind === 'branch') where.set(event.user, rest);
      else where.delete(event.user);
    }
    if (goal) conversions.push(...goal.commit());
  }

  /**
   * After a commit of `moves` (and `conversions` rows, which a checkpoint also replaces): counts and timers change, and
   * the first moves since a checkpoint plan one, a checkpoint interval after them rather than at once, so a minute's
   * firings of many tenants are not followed by a checkpoint of every partition they moved while the next tenants
   * still fire; the partitions a firing moved come due together and commit their checkpoints together
   * (CommitGroup). Single-user moves or conversions bring the checkpoint sooner than bulk moves alone.
   */
  afterCommit(touched: InstanceRuntime[], moves: JournalMove[], conversions = 0): void {
    const moveCount = moves.length + conversions;
    for (const instance of touched) this.engine.countsChanged(instance.id, instance.record.tenantId);
    if (moveCount === 0) return;
    this.engine.timersChanged(this.tenant.id);
    if (this.movesSinceCheckpoint === 0) this.uncheckpointedSince = this.engine.wallClock.now();
    this.movesSinceCheckpoint += moveCount;
    this.singleMovesSinceCheckpoint ||= conversions > 0 || moves.some((move) => move.bitmap === null);
    this.planCheckpoint();
  }

  /** Writes every shard of this partition when enough moves were made, or time passed, since the first uncheckpointed one. */
  async checkpointIfDue(force = false): Promise<void> {
    const now = this.engine.wallClock.now();
    const enoughMoves = this.movesSinceCheckpoint >= checkpointMovesAfter(this.engine.checkpointEveryMoves, this.lastCheckpointBytes);
    const due = enoughMoves || (this.movesSinceCheckpoint > 0 && now >= this.checkpointDueAt());
    if (!force && !due) return;
    await this.lock.run(async () => {
      if (!this.lease) return;
      const checkpoints = [...this.tenant.instances.values()].flatMap((i) => {
        const shard = i.shards[this.partition];
        return shard ? [{ instanceId: i.id, partition: this.partition, data: shard.encode() }] : [];
      });
      await this.engine.commits.checkpoint(this.lease, checkpoints, this.engine.clock.now());
      this.lastCheckpointBytes = checkpoints.reduce((bytes, checkpoint) => bytes + checkpoint.data.length, 0);
      this.movesSinceCheckpoint = 0;
      this.singleMovesSinceCheckpoint = false;
      this.engine.checkpointSchedule.cancel(this);
    });
  }

  /**
   * After a failed commit the shards in memory are ahead of the database: drop them and rebuild from it. The counts
   * published before the firing (the last committed ones) are not replaced meanwhile; a read of this engine's says the
   * partition is being rebuilt (503 partition_recovering) rather than leave its users out.
   */
  discardUncommitted(): void {
    this.hold(null);
    for (const instance of this.tenant.instances.values()) {
      instance.shards[this.partition] = undefined;
      instance.rebuilding.add(this.partition);
    }
    this.poke();
  }
}

/** What a single-user move's journal row takes, roughly (ids, steps, time and its index entries). */
const JOURNAL_ROW_BYTES = 64;

/**
 * The moves after which a partition writes its next checkpoint: `everyMoves`, or as many as the journal rows that
 * outweigh its last checkpoint when those are more. Restart recovery replays the rows past a partition's checkpoint,
 * so fewer moves between checkpoints make it shorter; a big checkpoint (millions of scattered users) is written no
 * more often than the journal rows it spares replaying would weigh.
 */
export function checkpointMovesAfter(everyMoves: number, lastCheckpointBytes: number): number {
  return Math.max(everyMoves, Math.ceil(lastCheckpointBytes / JOURNAL_ROW_BYTES));
}

function branchConditionTexts(workflow: InstanceRuntime['workflow']): string[] {
  return workflow.eventSteps.flatMap((step) => workflow.get(step).conditions.map((condition) => condition.text));
}

function concatEvents(rows: LogRow[]): LogRow['events'] {
  let total = 0;
  for (const row of rows) total += row.events.length;
  const events = new Array<LogRow['events'][number]>(total);
  let at = 0;
  for (const row of rows) for (const event of row.events) events[at++] = event;
  return events;
}
