// Point-in-time reads (`?asOf=` on an instance's counts and step exports): who was at each step of a running instance
// at a past moment T, rebuilt from the database on the caller's thread (the engine thread goes on applying events), by
// the replay recovery uses (recovery.ts `replayUntil`), stopped at T: the journal rows of each partition moved at or
// before T, applied onto a base.
//
// The base of a partition is its checkpoint when that holds no move after T, else an empty shard at the instance's
// start (journal seq 0). A checkpoint is one row per shard, overwritten every few seconds, so for most past moments
// only the replay from the start can answer. That needs every journal row the instance ever wrote, and is refused
// (422 `outside_retention`, naming the range that can be answered) when
// - retention deleted moves made since the instance started (the journal holds them from `retainedFrom` on), or
// - a crowd update changed the instance's users without journal rows (a checkpoint with `unjournaled` > 0): the state
//   before it is nowhere any more; from the newest move of the checkpoints written since on, checkpoint + journal answer.
// A checkpoint is the state at T when its newest move was made at or before T and so was the last change no journal
// row carries (`Shard.unjournaledAt`, kept in its header); the moves after it made by T are replayed onto it. Moves are
// compared by their time (engine clock), so a moment is exact to the millisecond of the batches that moved then.
import { RoaringBitmap32 } from '../crowd/bitmap';
import { AppError, notFound } from '../errors';
import { retainedFrom } from '../notifications/journal-retention';
import { tenantLimits } from '../limits/limits';
import type { Database } from '../storage/database';
import type { Tenant } from '../tenants/tenants';
import { requireInstance } from './instances';
import { loadDefinition } from './instance-store';
import { replayUntil } from './recovery';
import { WorkflowRuntime } from './runtime';
import { Shard } from './shard';
import { lastMoveTime, loadCheckpoints } from './store/replay';
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
  const checkpoints = await loadCheckpoints(database, instanceId, partitions);
  const retained = await retainedFrom(database, tenant.id, now);
  const unjournaled = [...checkpoints.values()].some((cp) => cp.unjournaled > 0);
  const trimmed = retained !== null && startMs <= retained;
  const fromStart = !unjournaled && !trimmed;

  // Each checkpoint is a base for every moment from `from` on: its newest move was made by then, and so was the last
  // change no journal row carries; with moves deleted by retention, no earlier than what retention kept (the newest
  // move found may not be the newest it held).
  const bases = new Map<number, { shard: Shard; after: number; from: number }>();
  for (const [p, cp] of checkpoints) {
    const shard = Shard.decode(instanceId, p, cp.data);
    // Conversions come from outside the journal: a checkpoint's are of its own time, not T's.
    shard.converted.clear();
    // A checkpoint of a crowd update written before the change was dated (unjournaledAt 0) says nothing of when.
    const changedAt = cp.unjournaled === 0 ? startMs : shard.unjournaledAt || Number.POSITIVE_INFINITY;
    const newest = (await lastMoveTime(database, instanceId, p, cp.journalSeq)) ?? startMs;
    bases.set(p, { shard, after: cp.journalSeq, from: Math.max(changedAt, newest, trimmed ? retained : startMs) });
  }
  // The earliest moment every partition has a base for (a partition without a checkpoint has only the start).
  const from = fromStart ? startMs : Math.max(...partitions.map((p) => bases.get(p)?.from ?? Number.POSITIVE_INFINITY));
  if (asOf < from || asOf > now) {
    const why = fromStart
      ? `the instance started at ${iso(startMs)}`
      : trimmed
        ? `older moves were deleted by retention (journalRetentionHours ${(await tenantLimits(database, tenant.id)).journalRetentionHours})`
        : 'a crowd update changed its users without journal rows, and the state before the checkpoints written since is not kept';
    const range = Number.isFinite(from) ? `from ${iso(from)} to now (${iso(now)})` : `no past moment, only the present (without asOf)`;
    throw new AppError('outside_retention', `asOf (${iso(asOf)}) is outside what instance ${instanceId} can answer: ${range}; ${why}`, {
      path: 'asOf',
      retainedFrom: Number.isFinite(from) ? iso(from) : null,
      retainedTo: iso(now),
    });
  }

  const workflow = new WorkflowRuntime(await loadDefinition(database, row.workflowId, row.version), row.workflowId);
  // The nearest base: the checkpoint if it is not after T, else the start (reached only when fromStart).
  const nearest = new Map(
    partitions.map((p) => {
      const checkpoint = bases.get(p);
      return [p, checkpoint && checkpoint.from <= asOf ? checkpoint : { shard: new Shard(instanceId, p), after: 0 }];
    }),
  );
  await replayUntil(database, instanceId, nearest, asOf, workflow);
  const shards = [...nearest.values()].map((base) => base.shard);
  return { instanceId, asOf, workflow, shards };
}

/** GET …/counts?asOf=: the counts at that moment (without `converted`: conversions are not journaled). */
export async function countsAsOf(database: Database, tenant: Tenant, instanceId: string, asOf: number, now: number): Promise<Counts & { asOf: string }> {
  const at = await instanceAsOf(database, tenant, instanceId, asOf, now);
  return { ...countsOf(instanceId, at.workflow, at.shards, false), asOf: iso(asOf) };
}

/** GET …/steps/{step}/export?asOf=: the users at the step then; 404 for a step neither the workflow nor that moment has. */
export async function stepUsersAsOf(database: Database, tenant: Tenant, instanceId: string, step: string, asOf: number, now: number): Promise<RoaringBitmap32> {
  const at = await instanceAsOf(database, tenant, instanceId, asOf, now);
  const bitmaps = at.shards.flatMap((shard) => shard.steps.get(step) ?? []);
  if (!at.workflow.steps.has(step) && bitmaps.every((bitmap) => bitmap.size === 0)) throw notFound(`Step "${step}" of instance ${instanceId}`);
  return RoaringBitmap32.orMany(bitmaps);
}
