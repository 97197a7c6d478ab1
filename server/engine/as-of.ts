// Point-in-time reads (`?asOf=` on an instance's counts and step exports): who was at each step of a running instance
// at a past moment T, rebuilt from the database on the caller's thread (the engine thread goes on applying events),
// partition by partition from the nearest of two bases:
// - its checkpoint (one row per shard, overwritten every few seconds): played forward by recovery's replay
//   (recovery.ts `replayUntil`) when it holds no move after T, else turned back by undoing its journal rows made after
//   T, newest first (rewind.ts): a moment an hour back costs the hour's rows, however old the instance;
// - the instance's start (an empty shard at journal seq 0) played forward to T, when T is nearer the start than the
//   checkpoint (both read rows between their base and T; time stands in for how many).
// Crowd updates move users without journal rows (they notify nobody); each records what it changed in a shard as a
// CrowdChange row (crowd-changes.ts), which both directions cross where it comes among the rows.
// Moments that can be answered (else 422 `outside_retention`, naming the range):
// - from the start while the journal holds every move the instance made and every crowd update's change is recorded
//   (a checkpoint counts the updates it went through, `unjournaled`; those made before changes were recorded have none);
// - else from the later of what retention kept (the journal holds every move from `retainedFrom` on) and the last
//   crowd update whose change is not recorded: the state before it is nowhere any more.
// Moves are compared by their time (engine clock), so a moment is exact to the millisecond of the batches that moved
// then; a shard's moves are made in seq order, so its rows after T are the last ones before the checkpoint's seq.
import { RoaringBitmap32 } from '../crowd/bitmap';
import { AppError, notFound } from '../errors';
import { retainedFrom } from './journal-retention';
import { tenantLimits } from '../limits/limits';
import type { Database } from '../storage/database';
import type { Tenant } from '../tenants/tenants';
import { requireInstance } from './instances';
import { loadDefinition } from './instance-store';
import { replayUntil } from './recovery';
import { rewindTo } from './rewind';
import { WorkflowRuntime } from './runtime';
import { Shard } from './shard';
import { crowdChangeCounts } from '../storage/journal/crowd-changes';
import { type CrowdChange, loadCrowdChanges } from './crowd-changes';
import { type Checkpoint, lastMoveTimes, loadCheckpoints } from '../storage/journal/replay';
import { countsOf } from './tenant';
import type { Counts } from './types';

/** What a point-in-time read rebuilt: the instance's shards as they were at `asOf`. */
export type InstanceAsOf = { instanceId: string; asOf: number; workflow: WorkflowRuntime; shards: Shard[] };

const iso = (ms: number) => new Date(ms).toISOString();

/** The instance's shards at `asOf` (epoch ms), or a 4xx naming the range of moments that can be answered. */
export async function instanceAsOf(database: Database, tenant: Tenant, instanceId: string, asOf: number, now: number): Promise<InstanceAsOf> {
  const row = await requireInstance(database, tenant.id, instanceId);
  if (row.state !== 'running' || !row.startedAt) {
    throw new AppError(
      'unprocessable',
      `asOf reads a running instance; instance ${instanceId} is ${row.state}` +
        (row.state === 'stopped' ? ' (its users at stop are its snapshot: GET …/snapshot, or the export without asOf)' : ''),
      { path: 'asOf' },
    );
  }
  const startMs = row.startedAt.getTime();
  const partitions = Array.from({ length: tenant.partitions }, (_, p) => p);
  const checkpoints = await loadCheckpoints(database, tenant.id, instanceId, partitions);
  const retained = await retainedFrom(database, tenant.id, now);
  const recorded = await crowdChangeCounts(database, tenant.id, instanceId);
  // A checkpoint counts every crowd update it went through; the changes of those made before they were recorded
  // (CrowdChange rows) cannot be crossed.
  const unrecorded = (p: number, cp: Checkpoint) => cp.unjournaled > (recorded.get(p)?.count ?? 0);
  const uncrossable = [...checkpoints].some(([p, cp]) => unrecorded(p, cp));
  const trimmed = retained !== null && startMs <= retained;
  const fromStart = !uncrossable && !trimmed;

  // Each checkpoint is the state at `madeAt`: its newest move was made then, or its last crowd update. Rewound
  // (./rewind.ts), it answers every moment from `from` on: after the last change it cannot cross, and with every move
  // since kept by retention (the newest move found may not be the newest it held, so no earlier than what it kept).
  const newest = await lastMoveTimes(database, tenant.id, instanceId, new Map([...checkpoints].map(([p, cp]) => [p, cp.journalSeq])));
  const kept = trimmed ? retained : startMs;
  const bases = new Map<number, { shard: Shard; after: number; madeAt: number; from: number }>();
  for (const [p, cp] of checkpoints) {
    const shard = Shard.decode(instanceId, p, cp.data);
    // Conversions come from outside the journal: a checkpoint's are of its own time, not T's.
    shard.converted.clear();
    // The recorded changes came after the unrecorded ones; a checkpoint of a crowd update written before the change was
    // dated (unjournaledAt 0) says nothing of when.
    const barrier = unrecorded(p, cp) ? (recorded.get(p)?.firstMs ?? (shard.unjournaledAt || Number.POSITIVE_INFINITY)) : startMs;
    const madeAt = Math.max(shard.unjournaledAt, newest.get(p) ?? startMs);
    bases.set(p, { shard, after: cp.journalSeq, madeAt, from: Math.max(barrier, kept) });
  }
  // The earliest moment every partition has a base for (a partition without a checkpoint has only the start).
  const from = fromStart ? startMs : Math.max(...partitions.map((p) => bases.get(p)?.from ?? Number.POSITIVE_INFINITY));
  if (asOf < from || asOf > now) {
    const why = fromStart
      ? `the instance started at ${iso(startMs)}`
      : trimmed
        ? `older moves were deleted by retention (journalRetentionHours ${(await tenantLimits(database, tenant.id)).journalRetentionHours})`
        : 'a crowd update made before such updates were recorded changed its users without journal rows, and the state before it is not kept';
    const range = Number.isFinite(from) ? `from ${iso(from)} to now (${iso(now)})` : `no past moment, only the present (without asOf)`;
    throw new AppError('outside_retention', `asOf (${iso(asOf)}) is outside what instance ${instanceId} can answer: ${range}; ${why}`, {
      path: 'asOf',
      retainedFrom: Number.isFinite(from) ? iso(from) : null,
      retainedTo: iso(now),
    });
  }

  const workflow = new WorkflowRuntime(await loadDefinition(database, tenant.id, row.workflowId, row.version), row.workflowId);
  // Per partition, the nearest base: its checkpoint played forward when it is not after T, else the checkpoint turned
  // back or the start played forward, whichever is nearer T (time stands in for the rows either reads).
  const forward = new Map<number, { shard: Shard; after: number; changes?: CrowdChange[] }>();
  const back = new Map<number, { shard: Shard; seq: number; changes: CrowdChange[] }>();
  const fromTheStart: number[] = [];
  for (const p of partitions) {
    const checkpoint = bases.get(p);
    if (checkpoint && checkpoint.madeAt <= asOf) forward.set(p, checkpoint);
    else if (checkpoint && checkpoint.from <= asOf && !(fromStart && asOf - startMs < checkpoint.madeAt - asOf))
      back.set(p, { shard: checkpoint.shard, seq: checkpoint.after, changes: [] });
    else fromTheStart.push(p);
  }
  // The crowd updates each crosses: made by T from the start, made after T back from the checkpoint.
  const untilThen = await loadCrowdChanges(database, tenant.id, instanceId, fromTheStart, Number.NEGATIVE_INFINITY, asOf);
  for (const p of fromTheStart) forward.set(p, { shard: new Shard(instanceId, p), after: 0, changes: untilThen.get(p) ?? [] });
  const sinceThen = await loadCrowdChanges(database, tenant.id, instanceId, [...back.keys()], asOf, Number.POSITIVE_INFINITY);
  for (const [p, base] of back) base.changes = sinceThen.get(p) ?? [];
  await replayUntil(database, tenant.id, instanceId, forward, asOf, workflow);
  await rewindTo(database, tenant.id, back, asOf, workflow);
  const shards = partitions.map((p) => (forward.get(p) ?? back.get(p))!.shard);
  return { instanceId, asOf, workflow, shards };
}

/** GET …/counts?asOf=: the counts at that moment (without `converted`: conversions are not journaled; with `exited`: exits are). */
export async function countsAsOf(database: Database, tenant: Tenant, instanceId: string, asOf: number, now: number): Promise<Counts & { asOf: string }> {
  const at = await instanceAsOf(database, tenant, instanceId, asOf, now);
  return { ...countsOf(instanceId, at.workflow, at.shards, false), asOf: iso(asOf) };
}

/**
 * GET …/steps/{step}/export?asOf=: the users at the step then (`exited`: who had left the journey from it by its exit
 * criteria, journaled as moves); 404 for a step neither the workflow nor that moment has.
 */
export async function stepUsersAsOf(
  database: Database,
  tenant: Tenant,
  instanceId: string,
  step: string,
  asOf: number,
  now: number,
  users: 'in' | 'exited' = 'in',
): Promise<RoaringBitmap32> {
  const at = await instanceAsOf(database, tenant, instanceId, asOf, now);
  if (users === 'exited' && !at.workflow.exit)
    throw new AppError('unprocessable', `Instance ${instanceId} has no exit criteria; export users=in instead`, { path: 'users' });
  const bitmaps = at.shards.flatMap((shard) => (users === 'exited' ? shard.exited : shard.steps).get(step) ?? []);
  if (!at.workflow.steps.has(step) && bitmaps.every((bitmap) => bitmap.size === 0)) throw notFound(`Step "${step}" of instance ${instanceId}`);
  return RoaringBitmap32.orMany(bitmaps);
}
