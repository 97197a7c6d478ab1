// Reads the engine answers (the request thread calls them through its client when its board has no answer): an
// instance's counts, the users of one step (exports), and where one user is. A running instance is read from its shards in memory,
// in a cluster from the database for the partitions other members hold; a stopped one from its snapshot.
import { RoaringBitmap32 } from '../crowd/bitmap';
import { AppError, notFound } from '../errors';
import { committedHoldout, committedInstance, committedInstances, committedShard, committedStepUsers } from './committed';
import type { CommittedShards } from './committed-cache';
import { requireInstance } from './instances';
import { partitionOf } from './partitioning';
import { Shard } from './shard';
import { unionInSlices } from './slices';
import { recentMovesOf } from './user-moves';
import type { InstanceRuntime, TenantRuntime } from './tenant';
import type { Counts, HoldoutGroup, StepUsers, WhereIsUser } from './types';
import type { Database } from '../storage/database';

/** What the reads need of the engine. */
export interface ReadSource {
  /** The storage instances, snapshots and the journal are read from. */
  readonly database: Database;
  tenant(tenantId: string): Promise<TenantRuntime>;
  /** The tenant's partitions are still loading after a restart: a live read answers 503 instead of waiting. */
  isRecovering(tenantId: string): boolean;
  /** The running instance if this engine has it loaded (any tenant). */
  findRuntime(instanceId: string): InstanceRuntime | undefined;
  /** In a cluster on PostgreSQL (other processes hold some of the partitions): the shards kept of theirs. */
  readonly committed: CommittedShards | undefined;
}

/** Live counts of a running instance; a stopped instance answers with its snapshot counts. */
export async function getCounts(source: ReadSource, tenantId: string, instanceId: string): Promise<Counts> {
  // The hot path (a live instance) answers from memory without a query.
  const running = source.findRuntime(instanceId);
  if (running && running.record.tenantId === tenantId) return refuseWhileRebuilding(running).counts();
  const row = await requireInstance(source.database, tenantId, instanceId);
  if (row.state === 'running') refuseWhileRecovering(source, tenantId);
  const live = (await source.tenant(tenantId)).instances.get(row.id);
  if (live) return refuseWhileRebuilding(live).counts();
  const snapshot = await source.database.db.instanceSnapshot.findUnique({ where: { instanceId, tenantId } });
  if (snapshot) return JSON.parse(snapshot.counts) as Counts;
  return { instanceId, total: 0, entered: 0, steps: {}, edges: {} };
}

/**
 * The users at `step` (`users: converted`: who reached the goal from it; `exited`: who left the journey from it by its
 * exit criteria): the union of the shards of a running
 * instance, or the snapshot of a stopped one. With `group`, only the holdout group's users (AND) or the others (ANDNOT).
 */
export async function stepBitmap(
  source: ReadSource,
  tenantId: string,
  instanceId: string,
  step: string,
  users: StepUsers,
  group?: HoldoutGroup,
): Promise<RoaringBitmap32> {
  const row = await requireInstance(source.database, tenantId, instanceId);
  if (row.state === 'running') refuseWhileRecovering(source, tenantId);
  const tenant = await source.tenant(tenantId);
  // In a cluster other members hold some partitions, and may have started the instance: read those as committed.
  const kept = source.committed;
  const live =
    tenant.instances.get(row.id) ?? (kept && row.state === 'running' ? await committedInstance(source.database, row, tenant.partitions, kept) : undefined);
  if (live) {
    refuseWhileRebuilding(live);
    if (!live.workflow.steps.has(step)) throw notFound(`Step "${step}" of instance ${instanceId}`);
    if (group && !live.workflow.holdout) throw noHoldout(instanceId, row.version);
    if (users === 'converted' && !live.workflow.goal) throw noGoal(instanceId, row.version);
    if (users === 'exited' && !live.workflow.exit) throw noExit(instanceId, row.version);
    const bitmap =
      users === 'converted'
        ? live.convertedUsers(step)
        : users === 'exited'
          ? kept
            ? await committedStepUsers(live, step, kept, 'exited')
            : live.exitedUsers(step)
          : kept
            ? await committedStepUsers(live, step, kept)
            : await unionInSlices(tenant.slices(), live.stepBitmaps(step));
    return group ? inGroup(bitmap, kept ? await committedHoldout(live, kept) : live.holdoutUsers(), group) : bitmap;
  }
  const snapshot = await source.database.db.instanceSnapshot.findUnique({ where: { instanceId, tenantId } });
  if (!snapshot) throw notFound(`Snapshot of instance ${instanceId}`);
  const counts = JSON.parse(snapshot.counts) as Counts;
  if (!(step in counts.steps)) throw notFound(`Step "${step}" of instance ${instanceId}`);
  // Counts carry `converted` exactly when the workflow has a goal, and `holdout` when it has a holdout (tenant.ts).
  if (group && counts.holdout === undefined) throw noHoldout(instanceId, row.version);
  if (users === 'converted' && counts.converted === undefined) throw noGoal(instanceId, row.version);
  if (users === 'exited' && counts.exited === undefined) throw noExit(instanceId, row.version);
  const shard = Shard.decode(instanceId, -1, snapshot.bitmaps);
  const bitmap = users === 'in' ? shard.step(step) : ((users === 'converted' ? shard.converted : shard.exited).get(step) ?? new RoaringBitmap32());
  return group ? inGroup(bitmap, shard.holdout, group) : bitmap;
}

function inGroup(users: RoaringBitmap32, holdout: RoaringBitmap32, group: HoldoutGroup): RoaringBitmap32 {
  return group === 'holdout' ? RoaringBitmap32.and(users, holdout) : RoaringBitmap32.andNot(users, holdout);
}

/** An export of one group where the journey holds out nobody: a 422, as for converted users without a goal. */
function noHoldout(instanceId: string, version: number): AppError {
  return new AppError('unprocessable', `Instance ${instanceId} holds out nobody (version ${version} of its workflow has no holdout); leave out group`, {
    path: 'group',
  });
}

/** An export of converted users where nobody can convert: a 422 (the request is well formed, the instance cannot answer it). */
function noGoal(instanceId: string, version: number): AppError {
  return new AppError(
    'unprocessable',
    `Instance ${instanceId} has no goal (version ${version} of its workflow defines none), so it has no converted users; export users=in instead`,
    { path: 'users' },
  );
}

/** An export of exited users where no criteria let anyone exit: a 422, as for converted users without a goal. */
function noExit(instanceId: string, version: number): AppError {
  return new AppError(
    'unprocessable',
    `Instance ${instanceId} has no exit criteria (version ${version} of its workflow defines none), so nobody exited early; export users=in instead`,
    { path: 'users' },
  );
}

/** The steps the user rests in, in every running instance of the tenant, and the user's recent moves. */
export async function whereIsUser(source: ReadSource, tenantId: string, user: number): Promise<WhereIsUser> {
  refuseWhileRecovering(source, tenantId);
  const runtime = await source.tenant(tenantId);
  const instances: WhereIsUser['instances'] = [];
  const partition = partitionOf(user, runtime.partitioning);
  const kept = source.committed;
  for (const instance of kept ? await committedInstances(runtime, kept) : runtime.instances.values()) {
    if (!kept) refuseWhileRebuilding(instance, partition);
    const shard = kept ? await committedShard(instance, partition, kept) : instance.shards[partition];
    if (!shard) continue;
    for (const [step, bitmap] of shard.steps) {
      if (bitmap.has(user)) instances.push({ instanceId: instance.id, workflowId: instance.record.workflowId, step });
    }
  }
  const recent = await recentMovesOf(source.database, tenantId, user, partition);
  return {
    user,
    instances,
    recentMoves: recent.moves,
    recentMovesComplete: recent.complete,
    ...(recent.searchedBackTo === undefined ? {} : { recentMovesSearchedBackTo: recent.searchedBackTo }),
  };
}

/** Seconds a client is asked to wait before reading a tenant whose partitions are loading again. */
const RECOVERING_RETRY_AFTER_SECONDS = 1;

/**
 * A partition of the instance whose shard is being rebuilt after a failed commit (InstanceRuntime.rebuilding) has no
 * figures in memory: a read says so, as while loading after a restart, instead of leaving its users out.
 */
function refuseWhileRebuilding(instance: InstanceRuntime, partition?: number): InstanceRuntime {
  const rebuilding = [...instance.rebuilding].filter((p) => partition === undefined || p === partition).sort((a, b) => a - b);
  if (rebuilding.length === 0) return instance;
  throw new AppError(
    'partition_recovering',
    `Partition${rebuilding.length === 1 ? '' : 's'} ${rebuilding.join(', ')} of instance ${instance.id} ${rebuilding.length === 1 ? 'is' : 'are'} being rebuilt from the database after a commit that failed; retry in a moment`,
    { retryAfterSeconds: RECOVERING_RETRY_AFTER_SECONDS, partitions: rebuilding },
  );
}

function refuseWhileRecovering(source: ReadSource, tenantId: string): void {
  if (!source.isRecovering(tenantId)) return;
  throw new AppError('partition_recovering', "The tenant's partitions are loading after a restart; retry in a moment", {
    retryAfterSeconds: RECOVERING_RETRY_AFTER_SECONDS,
  });
}
