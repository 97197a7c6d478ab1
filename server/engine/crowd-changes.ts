// What a crowd update changed in each shard (CrowdChange rows), for point-in-time reads: a crowd update moves users
// without journal rows (it notifies nobody, and a leaver goes to no step), so the replay and the rewind of ./as-of.ts
// read these beside the journal to cross it. Recovery never reads them: the update's checkpoint holds the change.
//
// A row: a JSON header naming each part's byte length, then portable roaring bytes: the users taken out of each step
// (leavers), then the moves of the users brought in (joiners entering the entry step and on down its direct chain), as
// the Mover made them, each a bitmap. The rows are storage's (server/storage/journal/crowd-changes.ts); this format of
// their bytes is the engine's.
import { RoaringBitmap32 } from '../crowd/bitmap';
import type { Database } from '../storage/database';
import type { JournalMove } from '../storage/journal/commit';
import { crowdChangeRows } from '../storage/journal/crowd-changes';
import { decodeBitmapBlob, encodeBitmapBlob } from './bitmap-blob';

export interface ChangeMove {
  from: string | null;
  to: string;
  users: RoaringBitmap32;
  count: number;
}

export interface CrowdChange {
  /** The journal's max seq at the update: the change follows the journal rows up to it. */
  journalSeq: number;
  timeMs: number;
  /** Users taken out of each step. */
  left: Map<string, RoaringBitmap32>;
  /** The joiners' moves, in the order they were made. */
  moves: ChangeMove[];
}

type Header = { left: [step: string, bytes: number][]; moves: [from: string | null, to: string, count: number, bytes: number][] };

export function encodeCrowdChange(left: Map<string, RoaringBitmap32>, moves: JournalMove[]): Buffer {
  return encodeBitmapBlob(
    (put): Header => ({
      left: [...left].map(([step, users]) => [step, put(users)]),
      moves: moves.map((move) => [
        move.fromStep,
        move.toStep,
        move.count,
        put(move.bitmap ? RoaringBitmap32.deserialize(move.bitmap, 'portable') : RoaringBitmap32.from([move.user!])),
      ]),
    }),
  );
}

function decodeCrowdChange(journalSeq: number, timeMs: number, data: Uint8Array): CrowdChange {
  const { header, take } = decodeBitmapBlob<Header>(data);
  const left = new Map(header.left.map(([step, bytes]) => [step, take(bytes)]));
  const moves = header.moves.map(([from, to, count, bytes]) => ({ from, to, count, users: take(bytes) }));
  return { journalSeq, timeMs, left, moves };
}

/**
 * The changes of the given shards of one instance made in (`afterMs`, `untilMs`], by partition, each partition's in
 * the order they were made: only those a read crosses are decoded (a change holds its joiners' and leavers' bitmaps).
 */
export async function loadCrowdChanges(
  database: Database,
  tenantId: string,
  instanceId: string,
  partitions: number[],
  afterMs: number,
  untilMs: number,
): Promise<Map<number, CrowdChange[]>> {
  const changes = new Map<number, CrowdChange[]>();
  if (partitions.length === 0 || afterMs >= untilMs) return changes;
  for (const row of await crowdChangeRows(database, tenantId, instanceId, partitions, afterMs, untilMs)) {
    changes.set(row.partition, [...(changes.get(row.partition) ?? []), decodeCrowdChange(row.journalSeq, row.timeMs, row.data)]);
  }
  return changes;
}
