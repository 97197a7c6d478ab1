// The work of the instance procedures, done under every partition lock of the tenant and committed in ONE fenced
// transaction with fresh checkpoints, so a crash leaves either the old or the new state, never a mix. A start is the
// exception: it commits partition by partition, invisible until its last commit (materializeStart).
import { loadCrowd } from '../crowd';
import { RoaringBitmap32 } from '../crowd/bitmap';
import { AppError, conflict, notFound } from '../errors';
import { RetryLaterError, type Json } from '../procedures/types';
import type { Engine } from './engine';
import { entryRouting } from './entry-routing';
import { loadDefinition } from './instance-store';
import { plannedAfter } from './local-time';
import { Mover } from './moves';
import { byPartition, splitByPartition } from './partitioning';
import { WorkflowRuntime } from './runtime';
import { Shard } from './shard';
import { inSlices, unionInSlices } from './slices';
import { commitBatch, type CheckpointWrite, type JournalMove } from '../storage/journal/commit';
import type { Lease } from '../storage/journal/leases';
import type { CrowdChangeWrite } from '../storage/journal/crowd-changes';
import { encodeCrowdChange } from './crowd-changes';
import { loadCheckpoints } from '../storage/journal/replay';
import { InstanceRuntime, type TenantRuntime } from './tenant';
import type { Reentry } from './types';
import type { Database } from '../storage/database';

const SNAPSHOT_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;

/** The workflow's most recently stopped instance other than `exceptId`: busybee's re-entry rule excludes its users. */
export function previousInstance(database: Database, tenantId: string, workflowId: string, exceptId: string) {
  return database.db.instance.findFirst({ where: { tenantId, workflowId, state: 'stopped', id: { not: exceptId } }, orderBy: { stoppedAt: 'desc' } });
}

/** Users of the previous instance, from its snapshot (none once the snapshot expired). */
async function previousUsers(database: Database, tenantId: string, workflowId: string, exceptId: string): Promise<RoaringBitmap32 | null> {
  const previous = await previousInstance(database, tenantId, workflowId, exceptId);
  if (!previous) return null;
  const snapshot = await database.db.instanceSnapshot.findUnique({ where: { instanceId: previous.id, tenantId } });
  if (!snapshot) return null;
  const decoded = Shard.decode(previous.id, -1, snapshot.bitmaps);
  // Those who left it by its exit criteria were in it too.
  const everyone = decoded.everyone();
  decoded.dispose(); // read back for this union only
  return everyone;
}

/**
 * The users of crowd `name` an instance of the workflow runs over: with reentry "exclude", less the previous instance's.
 * `users` is read from storage for this call: the caller owns it and frees it when done (see Arrivals in moves.ts).
 */
export async function crowdOf(database: Database, tenantId: string, name: string, workflowId: string, instanceId: string, reentry: Reentry) {
  const crowd = await loadCrowd(database, tenantId, name);
  if (!crowd) throw notFound(`Crowd "${name}"`);
  const excluded = reentry === 'exclude' ? await previousUsers(database, tenantId, workflowId, instanceId) : null;
  if (!excluded) return { users: crowd.bitmap, excludedCount: 0 };
  const users = RoaringBitmap32.andNot(crowd.bitmap, excluded);
  const excludedCount = crowd.bitmap.size - users.size;
  crowd.bitmap.dispose();
  excluded.dispose();
  return { users, excludedCount };
}

/** The refusal of a start whose crowd re-entry exclusion leaves empty (checked at submit, and again when it runs). */
export function nobodyLeft(crowd: string, excludedCount: number): AppError {
  return new AppError(
    'unprocessable',
    `Crowd "${crowd}" has no users left to start: all ${excludedCount} were in the previous instance of this workflow; start with reentry "allow" to let them enter again`,
    { crowd, excludedCount, reentry: 'exclude' },
  );
}

/**
 * How long an operation waits for partitions this process does not own yet before it fails (the default of
 * EngineOptions.partitionWaitMs): after a restart the predecessor's leases (15 s) run out first, and a member joining
 * or leaving moves partitions within a few leases.
 */
export const PARTITION_WAIT_MS = 2 * 60 * 1000;

/** Every partition lease of the tenant; an operation needs them all (some not owned yet → wait for them). */
async function allLeases(engine: Engine, tenantId: string): Promise<Lease[]> {
  const workers = await engine.workers(tenantId);
  const missing = workers.filter((w) => !w.lease).map((w) => w.partition);
  if (missing.length) {
    for (const worker of workers) if (!worker.lease) worker.poke();
    throw new RetryLaterError(`waiting for partitions ${missing.join(', ')} of tenant ${tenantId}: not owned by this process yet`, {
      waitMs: engine.partitionWaitMs,
    });
  }
  return workers.map((w) => w.lease!);
}

/**
 * A start commits its partitions in groups of about this many bytes of bitmaps (a small start in one transaction): on
 * SQLite a commit holds the database, and the engine thread with it, for as long as it writes. A group of a 2^27-user
 * start (three partitions' journal rows and checkpoints, ~5 MB) took 18-32 ms of the thread; groups of one partition
 * (1 MiB) left the isolation bench's start phase no better on SQLite and worse on PostgreSQL (BENCHMARKS.md session 32).
 */
export const START_COMMIT_BYTES = 4 * 1024 * 1024;

/** Every partition's index, for work done partition by partition in slices. */
const partitionsOf = (count: number) => Array.from({ length: count }, (_, partition) => partition);

/** `unjournaled`: the change being committed moved users without journal rows (see CheckpointWrite). */
function encodeAll(tenant: TenantRuntime, instance: InstanceRuntime, unjournaled = false): Promise<CheckpointWrite[]> {
  return inSlices(tenant.slices(), instance.shards, (shard, partition) => ({ instanceId: instance.id, partition, data: shard!.encode(), unjournaled }));
}

function startCrons(shard: Shard, workflow: WorkflowRuntime, now: number): void {
  for (const runtime of workflow.steps.values()) {
    if (runtime.step.kind === 'timer' && !shard.cronNext.has(runtime.step.name)) shard.cronNext.set(runtime.step.name, plannedAfter(runtime.step, now));
  }
}

async function locked<T>(engine: Engine, tenantId: string, work: (tenant: TenantRuntime, leases: Lease[]) => Promise<T>): Promise<T> {
  const tenant = await engine.tenant(tenantId);
  const letGo = await engine.gatherPartitions(tenantId);
  try {
    return await tenant.exclusive(async () => work(tenant, await allLeases(engine, tenantId)));
  } finally {
    await letGo();
  }
}

/**
 * A start commits partition by partition (in groups of about START_COMMIT_BYTES), each partition's moves and checkpoint in
 * the same transaction, and the instance turns `running` in the last one: on SQLite a start's single transaction over 2^27 users held the database (and the
 * engine thread, whose driver is synchronous) for tens of seconds, and every other tenant's events waited for it. Until
 * the last commit nobody reads the committed partitions (a `starting` instance is not loaded, counted or shown). A start
 * retried after a crash keeps the partitions an earlier attempt committed, so their moves are journaled once.
 */
export async function materializeStart(engine: Engine, tenantId: string, instanceId: string): Promise<Json> {
  const row = await engine.database.db.instance.findUniqueOrThrow({ where: { id: instanceId, tenantId } });
  if (row.state === 'running') return { instanceId, userCount: Number(row.userCount), excludedCount: Number(row.excludedCount) };
  if (row.state !== 'starting') throw conflict(`Instance ${instanceId} is ${row.state}; only a starting instance can start`);
  const workflow = new WorkflowRuntime(await loadDefinition(engine.database, tenantId, row.workflowId, row.version), row.workflowId);
  // A trigger-only instance (no crowd) starts empty; users enter by events.
  const { users, excludedCount } =
    row.crowdName === ''
      ? { users: new RoaringBitmap32(), excludedCount: 0 }
      : await crowdOf(engine.database, tenantId, row.crowdName, row.workflowId, instanceId, row.reentry as Reentry);
  if (users.size === 0 && !workflow.trigger) throw nobodyLeft(row.crowdName, excludedCount);
  const userCount = await locked(engine, tenantId, async (tenant, leases) => {
    const now = engine.clock.now();
    const instance = new InstanceRuntime(row, workflow, tenant.partitions);
    const routing = await entryRouting(tenant.data, workflow);
    const split = splitByPartition(users, tenant.partitioning);
    const partitions = partitionsOf(tenant.partitions);
    const earlier = await loadCheckpoints(engine.database, tenantId, instanceId, partitions);
    // Users enter one partition at a time, between slice boundaries: splitting a 2^27-user crowd for all 8 partitions
    // at once held the engine thread for ~75 ms.
    let total = 0;
    const slices = tenant.slices();
    let group: { leases: Lease[]; moves: JournalMove[]; checkpoints: CheckpointWrite[]; bytes: number } | null = null;
    for (const partition of partitions) {
      const last = partition === partitions.length - 1;
      const kept = earlier.get(partition);
      if (kept) {
        const shard = (instance.shards[partition] = Shard.decode(instanceId, partition, kept.data));
        const members = shard.members();
        total += members.size;
        members.dispose();
      }
      if (!kept || last) {
        const moves: JournalMove[] = [];
        if (!kept) {
          const shard = (instance.shards[partition] = new Shard(instanceId, partition));
          const part = split(partition);
          total += part.size;
          await routing.prepare(part, workflow.entry, now, slices);
          new Mover(workflow, shard, moves, now, routing).moveBulk(part, null, workflow.entry);
          // The shard copied the part into its steps and the moves hold its bytes; freed now, not by V8 (see moves.ts).
          if (part !== users) part.dispose();
          startCrons(shard, workflow, now);
        }
        const data = instance.shards[partition]!.encode();
        group ??= { leases: [], moves: [], checkpoints: [], bytes: 0 };
        group.leases.push(...leases.filter((lease) => lease.partition === partition));
        group.moves.push(...moves);
        group.checkpoints.push({ instanceId, partition, data });
        group.bytes += data.byteLength + moves.reduce((sum, move) => sum + (move.bitmap?.byteLength ?? 0), 0);
      }
      if (group && (last || group.bytes >= engine.startCommitBytes)) {
        await slices.boundary();
        const started = last ? { instanceId, userCount: total, excludedCount } : undefined;
        await commitBatch(engine.database, tenantId, { ...group, now, started });
        group = null;
      }
      await slices.boundary();
    }
    tenant.instances.set(instanceId, instance);
    return total;
  }).finally(() => users.dispose()); // read for this start (crowdOf); the shards hold copies
  engine.timersChanged(tenantId);
  engine.instancesChanged();
  engine.countsChanged(instanceId);
  return { instanceId, userCount, excludedCount };
}

export async function materializeStop(engine: Engine, tenantId: string, instanceId: string): Promise<Json> {
  return locked(engine, tenantId, async (tenant, leases) => {
    const row = await engine.database.db.instance.findUniqueOrThrow({ where: { id: instanceId, tenantId } });
    if (row.state === 'stopped') return { instanceId, state: 'stopped', total: Number(row.userCount) };
    const now = engine.clock.now();
    const instance = tenant.instances.get(instanceId);
    const snapshot = new Shard(instanceId, -1);
    const counts = instance?.counts() ?? { instanceId, total: 0, entered: 0, steps: {}, edges: {} };
    if (instance) {
      // Each step's shards ORed between slice boundaries: the partition locks keep them still meanwhile.
      const slices = tenant.slices();
      for (const step of instance.workflow.steps.keys()) snapshot.steps.set(step, await unionInSlices(slices, instance.stepBitmaps(step)));
      for (const step of Object.keys(counts.convertedFrom ?? {})) snapshot.converted.set(step, instance.convertedUsers(step));
      for (const step of Object.keys(counts.exitedFrom ?? {})) snapshot.exited.set(step, instance.exitedUsers(step));
      for (const [key, count] of Object.entries(counts.edges)) snapshot.edges.set(key, count);
      for (const shard of instance.shards) if (shard) snapshot.holdout.orInPlace(shard.holdout);
      snapshot.holdoutEntered = counts.holdout?.entered ?? 0;
      for (const shard of instance.shards)
        for (const [step, byPath] of shard?.paths ?? []) for (const [path, users] of byPath) snapshot.tookPath(step, path, users);
    }
    await commitBatch(engine.database, tenantId, {
      leases,
      moves: [],
      now,
      also: async (tx) => {
        const data = {
          tenantId,
          counts: JSON.stringify(counts),
          bitmaps: snapshot.encode() as Buffer<ArrayBuffer>,
          createdAt: new Date(now),
          expiresAt: new Date(now + SNAPSHOT_RETENTION_MS),
        };
        // Replaced, not upserted: an upsert conflicts on the snapshot's key, instanceId alone, which a table distributed
        // by tenant cannot keep unique (docs/SCALING.md); both statements name the tenant.
        await tx.instanceSnapshot.deleteMany({ where: { tenantId, instanceId } });
        await tx.instanceSnapshot.create({ data: { instanceId, ...data } });
        await tx.shardCheckpoint.deleteMany({ where: { tenantId, instanceId } });
        await tx.shardTimerPlan.deleteMany({ where: { tenantId, instanceId } });
        await tx.crowdChange.deleteMany({ where: { tenantId, instanceId } }); // only point-in-time reads of a running instance use them
        await tx.conversion.deleteMany({ where: { tenantId, instanceId } }); // the snapshot holds them
        await tx.instance.update({ where: { id: instanceId, tenantId }, data: { state: 'stopped', stoppedAt: new Date(now), userCount: counts.total } });
      },
    });
    // Unions and clones made for the snapshot's bytes (as large as the instance), freed now rather than by V8. The
    // instance's own shards are left to the collector: a reader may still hold one of their bitmaps.
    snapshot.dispose();
    tenant.instances.delete(instanceId);
    return { instanceId, state: 'stopped', total: counts.total };
  });
}

/**
 * New users join the entry step, departed users leave every step (not with an entry trigger); no notifications (nothing
 * is journaled). What it changed in each shard is kept as a CrowdChange row, which point-in-time reads cross.
 */
export async function materializeUpdateCrowd(engine: Engine, tenantId: string, instanceId: string, crowdName: string): Promise<Json> {
  const row = await engine.database.db.instance.findUniqueOrThrow({ where: { id: instanceId, tenantId } });
  const { users } = await crowdOf(engine.database, tenantId, crowdName, row.workflowId, instanceId, row.reentry as Reentry);
  return locked(engine, tenantId, async (tenant, leases) => {
    const instance = tenant.instances.get(instanceId);
    if (!instance) throw conflict(`Instance ${instanceId} is not running here`);
    const now = engine.clock.now();
    let joined = 0;
    let left = 0;
    const routing = await entryRouting(tenant.data, instance.workflow);
    const changes: CrowdChangeWrite[] = [];
    const targets = byPartition(users, tenant.partitioning);
    // Users who left by the exit criteria do not join again.
    const joinersOf = targets.map((target, partition) => {
      const everyone = instance.shards[partition]!.everyone();
      const joiners = RoaringBitmap32.andNot(target, everyone);
      everyone.dispose();
      return joiners;
    });
    // Per-user conditions over the joiners first, between slices (entry-routing.ts); the partition locks keep the
    // shards still meanwhile.
    const slices = tenant.slices();
    for (const joiners of joinersOf) await routing.prepare(joiners, instance.workflow.entry, now, slices);
    // In one go, not in slices: the running shards change in place, and no reader may see some partitions changed.
    targets.forEach((target, partition) => {
      const shard = instance.shards[partition]!;
      const members = shard.members();
      // With an entry trigger users also enter by events, so the crowd only adds users: nobody is taken out.
      const leavers = instance.workflow.trigger ? new RoaringBitmap32() : RoaringBitmap32.andNot(members, target);
      const joiners = joinersOf[partition];
      const moves: JournalMove[] = [];
      const mover = new Mover(instance.workflow, shard, moves, now, routing);
      shard.unjournaledAt = now;
      const leftSteps = new Map<string, RoaringBitmap32>();
      for (const [step, bitmap] of leavers.size > 0 ? shard.steps : []) {
        const leaving = RoaringBitmap32.and(bitmap, leavers);
        if (leaving.size > 0) leftSteps.set(step, leaving);
        mover.leaveBulk(leavers, step);
      }
      mover.moveBulk(joiners, null, instance.workflow.entry);
      // One row a shard, even an unchanged one: each checkpoint below counts one more unjournaled change.
      changes.push({ instanceId, partition, timeMs: now, data: encodeCrowdChange(leftSteps, moves) });
      joined += joiners.size;
      left += leavers.size;
      // All of this update's own (the shard ORed in the joiners; the change row and the moves hold bytes): freed now
      // rather than by V8, as a start's are (see Arrivals in moves.ts). `target` is `users` itself with one partition.
      for (const bitmap of [members, leavers, joiners, ...leftSteps.values()]) bitmap.dispose();
      if (target !== users) target.dispose();
    });
    users.dispose(); // read for this update (crowdOf)
    const userCount = instance.counts().total;
    await commitBatch(engine.database, tenantId, {
      leases,
      moves: [],
      checkpoints: await encodeAll(tenant, instance, true),
      crowdChanges: changes,
      now,
      also: async (tx) => void (await tx.instance.update({ where: { id: instanceId, tenantId }, data: { crowdName, userCount } })),
    });
    engine.countsChanged(instanceId);
    engine.timersChanged(tenantId);
    return { instanceId, joined, left, userCount };
  });
}

/** Users per step of the running version that the new version drops and `mapping` does not place. */
export function strandedUsers(steps: Record<string, number>, next: WorkflowRuntime, mapping: Record<string, string>): Record<string, number> {
  const stranded: Record<string, number> = {};
  for (const [step, count] of Object.entries(steps)) {
    if (count > 0 && !next.steps.has(step) && !mapping[step]) stranded[step] = count;
  }
  return stranded;
}

/** Keeps users by step name, moves users of removed steps as mapped (journaled), starts new steps empty. */
export async function materializeUpdateWorkflow(
  engine: Engine,
  tenantId: string,
  instanceId: string,
  version: number,
  mapping: Record<string, string>,
): Promise<Json> {
  const { workflowId } = await engine.database.db.instance.findUniqueOrThrow({ where: { id: instanceId, tenantId } });
  const next = new WorkflowRuntime(await loadDefinition(engine.database, tenantId, workflowId, version), workflowId);
  return locked(engine, tenantId, async (tenant, leases) => {
    const instance = tenant.instances.get(instanceId);
    if (!instance) throw conflict(`Instance ${instanceId} is not running here`);
    const stranded = strandedUsers(instance.counts().steps, next, mapping);
    if (Object.keys(stranded).length) throw conflict(`Users of steps removed in version ${version} would be stranded`, { stranded });
    const now = engine.clock.now();
    const moves: JournalMove[] = [];
    let moved = 0; // users, not journal rows: one row carries a whole bitmap, and a chain of steps journals every hop
    const routing = await entryRouting(tenant.data, next);
    const slices = tenant.slices();
    // Users of removed steps arrive at their mapped steps: per-user conditions over them first (entry-routing.ts).
    for (const old of instance.shards)
      for (const [name, users] of old?.steps ?? []) if (!next.steps.has(name) && users.size > 0) await routing.prepare(users, mapping[name], now, slices);
    // New shards, built in slices: the running ones stay as they are until the commit.
    const shards = await inSlices(slices, instance.shards, (old, partition) => {
      const fresh = new Shard(instanceId, partition);
      const mover = new Mover(next, fresh, moves, now, routing);
      for (const [name, users] of old!.steps) {
        if (users.size === 0) continue;
        const kept = next.steps.get(name);
        if (!kept) {
          moved += users.size;
          mover.arriveBulk(users, name, mapping[name]);
          continue;
        }
        fresh.step(name).orInPlace(users);
        if (kept.delayMs && old!.delays.has(name)) fresh.delays.set(name, old!.delays.get(name)!);
        if (kept.ttlMs && old!.ttls.has(name)) fresh.ttls.set(name, old!.ttls.get(name)!);
        if (kept.step.kind === 'timer' && old!.cronNext.has(name)) fresh.cronNext.set(name, old!.cronNext.get(name)!);
      }
      for (const [key, count] of old!.edges) fresh.edges.set(key, count);
      fresh.entered += old!.entered;
      // The holdout is the same in both versions (submitUpdateWorkflow refuses a change): the group is kept whole.
      fresh.holdout.orInPlace(old!.holdout);
      fresh.holdoutEntered = old!.holdoutEntered;
      // Who took which path stays so (a winner's version sends new entrants one way; earlier users keep theirs).
      for (const [step, byPath] of old!.paths) fresh.paths.set(step, byPath);
      for (const [step, users] of old!.converted) fresh.converted.set(step, users);
      for (const [step, users] of old!.exited) fresh.exited.set(step, users);
      startCrons(fresh, next, now);
      return fresh;
    });
    const updated = new InstanceRuntime(instance.record, next, tenant.partitions);
    shards.forEach((shard, partition) => (updated.shards[partition] = shard));
    await commitBatch(engine.database, tenantId, {
      leases,
      moves,
      checkpoints: await encodeAll(tenant, updated),
      now,
      also: async (tx) => void (await tx.instance.update({ where: { id: instanceId, tenantId }, data: { version } })),
    });
    instance.workflow = next;
    instance.record.version = version;
    shards.forEach((shard, partition) => (instance.shards[partition] = shard));
    engine.countsChanged(instanceId);
    engine.timersChanged(tenantId);
    return { instanceId, version, moved };
  });
}
