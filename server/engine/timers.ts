// Timers of a partition: cron steps, delay buckets, ttl re-evaluation of branch steps, an instance's stopAt, and at
// each firing of an instance its exit criteria over profiles and crowds (exit.ts). They
// run in memory under the partition lock (the same lock as event application), and one timer tick of a tenant
// commits every due partition's moves in ONE transaction fenced by all their leases.
import type { CompiledCondition } from '../conditions/compile';
import { evaluateIndexedPlan } from '../profiles/index-plan';
import { RoaringBitmap32 } from '../crowd/bitmap';
import { nextCronTime } from '../../core/model/cron';
import type { TimerStep } from '../../core/model/workflow';
import { entryRouting, perUserMatches } from './entry-routing';
import { exitAtFiring } from './exit';
import { dueZoneGroups, nextLocalFiring } from './local-time';
import { Mover } from './moves';
import type { PartitionWorker } from './partition';
import type { StepRuntime, WorkflowRuntime } from './runtime';
import type { Shard } from './shard';
import type { Slices } from './slices';
import { commitTogetherOrAlone, type CheckpointWrite, type JournalMove } from '../storage/journal/commit';
import type { Lease } from '../storage/journal/leases';
import type { TimerPlanWrite } from '../storage/journal/timer-plans';
import { withLocks, type InstanceRuntime, type TenantRuntime } from './tenant';

/** Earliest time (engine clock) a timer of the worker's partition is due, or null. */
export function nextTimerDue(worker: PartitionWorker): number | null {
  if (!worker.lease) return null; // re-taking the lease rebuilds the shards; their timers count from then
  let due: number | null = null;
  const consider = (t: number) => (due = due === null ? t : Math.min(due, t));
  for (const instance of worker.tenant.instances.values()) {
    const shard = instance.shards[worker.partition];
    if (!shard) continue;
    const at = instanceTimerDue(worker, instance, shard);
    if (at !== null) consider(at);
  }
  return due;
}

/** Earliest time (engine clock) a timer of the instance is due on `shard`, or null. */
function instanceTimerDue(worker: PartitionWorker, instance: InstanceRuntime, shard: Shard): number | null {
  let due: number | null = null;
  const consider = (t: number) => (due = due === null ? t : Math.min(due, t));
  if (instance.workflow.stopAt !== null && !worker.engine.isStopRequested(instance.id)) consider(instance.workflow.stopAt);
  for (const runtime of instance.workflow.steps.values()) {
    const name = runtime.step.name;
    if (runtime.step.kind === 'timer') consider(shard.cronNext.get(name) ?? 0);
    if (runtime.delayMs) for (const end of shard.delays.get(name)?.keys() ?? []) consider(end + runtime.delayMs);
    if (runtime.ttlMs) for (const end of shard.ttls.get(name)?.keys() ?? []) consider(end + runtime.ttlMs);
  }
  return due;
}

/**
 * Asks ahead of time for each timer step's firing after its next one: cron-parser takes milliseconds per answer (tens
 * for a yearly cron, which it searches day by day), and the tick that fires the step then finds the answer memoised
 * (core/model/cron.ts) instead of computing it between the fire and the commit. Memoised answers cost a lookup.
 * (A local-time timer plans over the zones present at its tick: local-time.ts.)
 */
export function warmNextFirings(worker: PartitionWorker): void {
  if (!worker.lease) return;
  for (const instance of worker.tenant.instances.values()) {
    const shard = instance.shards[worker.partition];
    if (!shard) continue;
    for (const [name, at] of shard.cronNext) {
      const step = instance.workflow.steps.get(name)?.step;
      if (step?.kind === 'timer' && !step.tzFromProfile) nextCronTime(step.cron, at, step.tz);
    }
  }
}

interface TimerWork {
  worker: PartitionWorker;
  lease: Lease;
  moves: JournalMove[];
  touched: InstanceRuntime[];
  checkpoints: CheckpointWrite[];
  timerPlans: TimerPlanWrite[];
}

/**
 * All due partitions of a tenant commit together or none do: while a partition this engine should hold is between
 * leases, the tenant's firing waits (taking the lease back wakes the timer loop), instead of moving the other
 * partitions' users and leaving that one's for a later firing.
 */
export function firingWaits(workers: PartitionWorker[]): boolean {
  return workers.some((worker) => !worker.lease && worker.shouldHold());
}

/** A tenant whose due timers fire: its id and its partitions' workers (of one engine). */
export interface FiringTenant {
  id: string;
  workers: PartitionWorker[];
}

/** Tenants whose firings share one transaction (and hold their partition locks meanwhile). */
const TENANTS_PER_COMMIT = 64;
/** A shared transaction is committed early once its bulk moves carry this many bitmap bytes. */
const BYTES_PER_COMMIT = 16 * 1024 * 1024;

const isDue = (worker: PartitionWorker, now: number) => (nextTimerDue(worker) ?? Number.POSITIVE_INFINITY) <= now;

/**
 * Groups of tenants firing at once: while one group's transaction is with the database, the next group's timers run
 * in memory (their partitions are others', so their locks are too). More would only queue on the journal lock.
 */
const GROUPS_IN_FLIGHT = 2;

/**
 * One timer tick: every due partition of every tenant runs its timers under its lock, and the firings of up to
 * TENANTS_PER_COMMIT tenants commit in ONE transaction fenced by all their leases (one journal lock and one COMMIT
 * for them all: 1,000 tenants' once-a-minute timers are a few transactions, not a thousand). A tenant's partitions
 * always commit together: a 10M-user timer step moves its users in all partitions at once. Throws, once every
 * tenant had its turn, the failures of those whose firing could not commit (their shards are rebuilt).
 */
export async function runDueTimers(tenants: FiringTenant[], now: number, tenantsPerCommit = TENANTS_PER_COMMIT): Promise<void> {
  const due = tenants.filter(({ workers }) => workers.some((worker) => isDue(worker, now)));
  const groups: FiringTenant[][] = [];
  for (let at = 0; at < due.length; at += tenantsPerCommit) groups.push(due.slice(at, at + tenantsPerCommit));
  const failures: unknown[] = [];
  const fireNext = async (): Promise<void> => {
    for (let group = groups.shift(); group; group = groups.shift()) failures.push(...(await fireTogether(group, now)));
  };
  // Settled, not raced: a lane that throws must not leave the other firing after this tick has returned.
  const lanes = await Promise.allSettled(Array.from({ length: Math.min(GROUPS_IN_FLIGHT, groups.length) }, fireNext));
  for (const lane of lanes) if (lane.status === 'rejected') throw lane.reason;
  if (failures.length === 1) throw failures[0];
  if (failures.length > 1) throw new AggregateError(failures, `the timer firings of ${failures.length} tenants did not commit`);
}

interface TenantFiring {
  tenant: FiringTenant;
  work: TimerWork[];
}

/** Fires a group of tenants under all their partition locks; returns the errors of the tenants that did not commit. */
async function fireTogether(tenants: FiringTenant[], now: number): Promise<unknown[]> {
  // Due-ness is judged under the locks: a tick already in flight (the timer loop's) finishes first, and what it
  // took is no longer due.
  return withLocks(
    tenants.flatMap(({ workers }) => workers.map((worker) => worker.lock)),
    async () => {
      const failures: unknown[] = [];
      let pending: TenantFiring[] = [];
      let bytes = 0;
      for (const tenant of tenants) {
        if (firingWaits(tenant.workers)) continue;
        const work: TimerWork[] = [];
        for (const worker of tenant.workers) {
          if (!isDue(worker, now)) continue;
          const collected = await collectTimers(worker, now);
          if (collected) work.push(collected);
        }
        if (work.length === 0) continue;
        pending.push({ tenant, work });
        for (const w of work) for (const move of w.moves) bytes += move.bitmap?.byteLength ?? 0;
        if (bytes >= BYTES_PER_COMMIT) {
          failures.push(...(await commitFirings(pending, now)));
          pending = [];
          bytes = 0;
        }
      }
      failures.push(...(await commitFirings(pending, now)));
      return failures;
    },
  );
}

const tenantCommit = ({ tenant, work }: TenantFiring, now: number) => ({
  tenantId: tenant.id,
  commit: {
    leases: work.map((w) => w.lease),
    moves: work.flatMap((w) => w.moves),
    checkpoints: work.flatMap((w) => w.checkpoints),
    timerPlans: work.flatMap((w) => w.timerPlans),
    now,
  },
});

/** Commits the firings together (or, that failing, one by one); a tenant whose commit fails drops the uncommitted
 * shards it moved in memory. */
async function commitFirings(firings: TenantFiring[], now: number): Promise<unknown[]> {
  if (firings.length === 0) return [];
  const database = firings[0].work[0].worker.engine.database; // the workers of one engine: its storage
  const outcomes = await commitTogetherOrAlone(
    database,
    firings.map((firing) => tenantCommit(firing, now)),
  );
  const failures: unknown[] = [];
  for (const [i, { work }] of firings.entries()) {
    const outcome = outcomes[i];
    if (outcome) failures.push(outcome.error);
    for (const w of work) {
      if (outcome) w.worker.discardUncommitted();
      else w.worker.afterCommit(w.touched, w.moves);
    }
  }
  return failures;
}

/**
 * Runs every due timer of the worker's partition in memory (the caller holds the partition lock) and returns what to
 * commit: its moves, checkpoints of the shards whose changes the journal cannot replay, and timer plans of shards
 * where only a timer's next firing is new (a few bytes instead of a checkpoint). Null when nothing changed or the
 * partition is not ours.
 */
async function collectTimers(worker: PartitionWorker, now: number): Promise<TimerWork | null> {
  if (!worker.lease) return null;
  const moves: JournalMove[] = [];
  const touched: InstanceRuntime[] = [];
  const checkpoints: CheckpointWrite[] = [];
  const timerPlans: TimerPlanWrite[] = [];
  for (const instance of worker.tenant.instances.values()) {
    if (instance.workflow.stopAt !== null && now >= instance.workflow.stopAt) worker.engine.requestStop(instance);
    const { changed, checkpoint, timerPlan } = await instanceTimers(worker, instance, now, moves);
    if (changed) touched.push(instance);
    const shard = instance.shards[worker.partition]!;
    if (checkpoint) checkpoints.push({ instanceId: instance.id, partition: worker.partition, data: shard.encode() });
    else if (timerPlan) timerPlans.push({ instanceId: instance.id, partition: worker.partition, cronNext: Object.fromEntries(shard.cronNext) });
  }
  if (touched.length === 0) return null;
  return { worker, lease: worker.lease, moves, touched, checkpoints, timerPlans };
}

/**
 * Runs the instance's due timers on the worker's partition shard. `changed`: anything moved or was re-planned.
 * `checkpoint`: some of it is not in the journal, so the commit must carry a checkpoint — ttl users put into a new
 * bucket. `timerPlan`: a timer fired without moving anyone (or was planned for the first time), so only its next
 * firing is new: a timer plan row makes it durable. A timer that moved users needs neither: replay derives its next
 * firing from the journaled move (server/engine/recovery.ts).
 */
async function instanceTimers(
  worker: PartitionWorker,
  instance: InstanceRuntime,
  now: number,
  moves: JournalMove[],
): Promise<{ changed: boolean; checkpoint: boolean; timerPlan: boolean }> {
  const shard = instance.shards[worker.partition];
  if (!shard) return { changed: false, checkpoint: false, timerPlan: false };
  const firing = (instanceTimerDue(worker, instance, shard) ?? Number.POSITIVE_INFINITY) <= now;
  const mover = new Mover(instance.workflow, shard, moves, now, await entryRouting(worker.tenant.data, instance.workflow));
  // The bulk moves below route per-user conditions from results prepared between slices (entry-routing.ts).
  const slices = worker.tenant.slices();
  // Exit criteria over profiles and crowds first: those who meet them leave before this firing moves anyone (exit.ts).
  const exited = firing && (await exitAtFiring(mover, slices));
  const fired = await fireTimerSteps(worker, instance.workflow, shard, mover, now, slices);
  let changed = fired.changed || exited;
  let checkpoint = false;
  for (const runtime of instance.workflow.steps.values()) {
    const step = runtime.step;
    const name = step.name;
    if (runtime.delayNext !== null) {
      // A delay ending, or a branch step's timeout: its users got no matching event within `after`.
      const users = takeDue(shard.delays.get(name), runtime.delayMs, now);
      if (users) {
        users.andInPlace(shard.step(name));
        await mover.routing.prepare(users, runtime.delayNext, now, slices);
        mover.moveOutOfDelay(users, name, runtime.delayNext);
        changed = true;
      }
    }
    if (runtime.ttlMs && step.kind === 'branch') {
      const remaining = takeDue(shard.ttls.get(name), runtime.ttlMs, now);
      if (!remaining) continue;
      remaining.andInPlace(shard.step(name));
      const stayed: RoaringBitmap32[] = [];
      for (const [i, condition] of runtime.conditions.entries()) {
        if (remaining.size === 0) break;
        const matched = await matching(worker.tenant, condition, remaining, now, slices);
        // A branch back to this step keeps its users here; like the unmatched ones, they are re-evaluated a ttl later.
        if (step.branches[i].next === name) stayed.push(matched);
        else {
          await mover.routing.prepare(matched, step.branches[i].next, now, slices);
          mover.moveBulk(matched, name, step.branches[i].next);
        }
        remaining.andNotInPlace(matched);
      }
      for (const users of stayed) remaining.orInPlace(users);
      if (remaining.size > 0) mover.bucketNow(shard.ttls, name, runtime.ttlBucketMs).orInPlace(remaining);
      changed = true;
      checkpoint = true;
    }
  }
  return { changed, checkpoint, timerPlan: fired.timerPlan };
}

/**
 * The due timer steps of a shard. Who moves is decided for every timer step before anyone moves: a user that one
 * firing moves into another timer step waits there for that step's next firing, even when both fire now (two
 * steps with the same cron, or a local-time timer's provisional plan, local-time.ts).
 */
async function fireTimerSteps(worker: PartitionWorker, workflow: WorkflowRuntime, shard: Shard, mover: Mover, now: number, slices: Slices) {
  const firings: { runtime: StepRuntime; step: TimerStep; groups: RoaringBitmap32[] }[] = [];
  for (const runtime of workflow.steps.values()) {
    const step = runtime.step;
    if (step.kind !== 'timer') continue;
    const next = shard.cronNext.get(step.name);
    if (next !== undefined && next > now) continue;
    const users = next === undefined ? null : shard.steps.get(step.name);
    const profiles = step.tzFromProfile ? await worker.tenant.data.profiles() : null;
    let groups: RoaringBitmap32[] = [];
    // A local-time timer moves the users of each zone whose firing came as one bulk move per zone.
    if (users && users.size > 0) groups = profiles ? dueZoneGroups(profiles, step, users, next!, now) : [users.clone()];
    firings.push({ runtime, step, groups });
    shard.cronNext.set(step.name, profiles ? nextLocalFiring(profiles, step, now) : nextCronTime(step.cron, now, step.tz));
  }
  let timerPlan = false;
  for (const { runtime, step, groups } of firings) {
    const journaled = mover.moves.length;
    for (const group of groups) {
      const moving = runtime.timerCondition ? await matching(worker.tenant, runtime.timerCondition, group, now, slices) : group;
      await mover.routing.prepare(moving, step.next, now, slices);
      mover.moveBulk(moving, step.name, step.next);
    }
    if (mover.moves.length === journaled) timerPlan = true;
  }
  return { changed: firings.length > 0, timerPlan };
}

/** The users of `users` satisfying the condition (no event): one bitmap plan when it compiles to one, else per user. */
async function matching(
  tenant: TenantRuntime,
  condition: CompiledCondition | null,
  users: RoaringBitmap32,
  now: number,
  slices: Slices,
): Promise<RoaringBitmap32> {
  if (!condition) return users.clone();
  const data = tenant.data;
  if (condition.plan) return evaluateIndexedPlan(condition.plan, await data.resolver(condition.crowds), users);
  await data.prepareCrowds(condition.crowds);
  return perUserMatches(data, condition, users, now, slices);
}

/**
 * Removes and returns the union of the buckets due at `now` (bucket end + duration ≤ now), or null. A lone due bucket
 * (the usual case) is handed over itself, out of the map: a union of one would copy every user of it.
 */
function takeDue(buckets: Map<number, RoaringBitmap32> | undefined, durationMs: number, now: number): RoaringBitmap32 | null {
  if (!buckets) return null;
  const due: RoaringBitmap32[] = [];
  for (const [end, bitmap] of buckets) {
    if (end + durationMs > now) continue;
    due.push(bitmap);
    buckets.delete(end);
  }
  if (due.length <= 1) return due[0] ?? null;
  return RoaringBitmap32.orMany(due);
}
