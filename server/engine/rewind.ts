// Rewinding a shard: a checkpoint made after a moment T turned back to T by undoing, newest first, its partition's
// journal rows made after T (point-in-time reads, ./as-of.ts). A checkpoint is seconds old on a running instance, so
// a moment an hour back costs the hour's rows, where the replay from the start (./recovery.ts `replayUntil`) costs
// every row since the start, and it needs no row older than T (retention may have deleted those).
//
// Undoing a move of users from A to B takes them out of B and puts them back in A, and takes its edge (and entry) off
// the counts; undoing an exit (a move to `$exit`, exit.ts) takes them out of A's exited users and puts them back in A.
// Undone newest first, each user's moves come back in the reverse of the order they were made, so the step members
// are exactly those at T. What the rewound shard does not hold: timer state (delay and ttl buckets, cron firings,
// which no read of a past moment uses: they are cleared), the experiments' path takers (shown only with conversions,
// which a past moment has not) and the holdout group's members, kept as they are now (a superset of those then, whose
// intersection with a step's users then is that of the group then, as every user at a step then had entered by then;
// the group's entries are counted back).
//
// Single-user rows are undone as bitmaps, like the forward replay's: a run of consecutive rows in which no user
// appears twice, grouped by (from, to), one bitmap operation per group.
import { RoaringBitmap32 } from '../crowd/bitmap';
import type { Database } from '../storage/database';
import { EXITED } from './exit';
import { heldOutUsers } from './holdout-bitmap';
import type { WorkflowRuntime } from './runtime';
import type { Shard } from './shard';
import type { CrowdChange } from './crowd-changes';
import { BITMAP, COUNT, FROM_STEP, journalBackTo, type ReplayRow, SEQ, TO_STEP, USER } from '../storage/journal/replay';

/**
 * Turns each checkpoint shard (`seq`: the last journal seq it holds) back to `untilMs`: the journal rows of its
 * partition at or before `seq` made after `untilMs` are undone, and the crowd updates' `changes` made after it (each
 * where it comes among the rows). The shards change in place.
 */
export async function rewindTo(
  database: Database,
  tenantId: string,
  bases: Map<number, { shard: Shard; seq: number; changes: CrowdChange[] }>,
  untilMs: number,
  workflow: WorkflowRuntime,
): Promise<void> {
  for (const [partition, { shard, seq, changes }] of bases) {
    const rewind = new Rewind(shard, workflow, changes);
    await journalBackTo(database, tenantId, shard.instanceId, partition, seq, untilMs, (row) => rewind.add(row));
    rewind.finish();
    shard.delays.clear();
    shard.ttls.clear();
    shard.cronNext.clear();
  }
}

interface UndoGroup {
  from: string | null;
  to: string;
  users: number[];
  count: number;
}

class Rewind {
  private readonly runUsers = new Set<number>();
  private readonly groups = new Map<string, UndoGroup>();

  /** Crowd updates' changes still to undo, oldest first (the last is undone first). */
  private readonly changes: CrowdChange[];

  constructor(
    private readonly shard: Shard,
    private readonly workflow: WorkflowRuntime,
    changes: CrowdChange[],
  ) {
    this.changes = [...changes];
  }

  /** The next row, newest first. */
  add(row: ReplayRow): void {
    // A change follows the journal rows up to its seq: it is undone before them.
    while (this.changes.length > 0 && row[SEQ] <= this.changes.at(-1)!.journalSeq) this.undoChange(this.changes.pop()!);
    const bitmap = row[BITMAP];
    if (bitmap) {
      this.flush();
      this.undo(row[FROM_STEP], row[TO_STEP], RoaringBitmap32.deserialize(bitmap, 'portable'), row[COUNT]);
      return;
    }
    const user = row[USER]!;
    if (this.runUsers.has(user)) this.flush();
    this.runUsers.add(user);
    const key = `${row[FROM_STEP] ?? ''}\u0000${row[FROM_STEP] === null ? 0 : 1}\u0000${row[TO_STEP]}`;
    let group = this.groups.get(key);
    if (!group) this.groups.set(key, (group = { from: row[FROM_STEP], to: row[TO_STEP], users: [], count: 0 }));
    group.users.push(user);
    group.count += row[COUNT];
  }

  /** Undoes what is pending: grouped rows, then the changes older than every row read. */
  finish(): void {
    this.flush();
    while (this.changes.length > 0) this.undoChange(this.changes.pop()!);
  }

  private flush(): void {
    for (const g of this.groups.values()) this.undo(g.from, g.to, RoaringBitmap32.from(g.users), g.count);
    this.groups.clear();
    this.runUsers.clear();
  }

  /** A crowd update undone: its joiners' moves, newest first, then its leavers back in their steps. */
  private undoChange(change: CrowdChange): void {
    this.flush();
    for (const move of [...change.moves].reverse()) this.undo(move.from, move.to, move.users, move.count);
    for (const [step, users] of change.left) this.shard.step(step).orInPlace(users);
  }

  private undo(from: string | null, to: string, users: RoaringBitmap32, count: number): void {
    const shard = this.shard;
    if (to === EXITED) {
      // An exit (exit.ts) took them out of `from` into the exited users of that step (of the entry step as they entered).
      shard.exited.get(from ?? this.workflow.entry)?.andNotInPlace(users);
    } else {
      shard.step(to).andNotInPlace(users);
      shard.countEdge(from, to, -count);
      // An edge first taken after the moment was not there then (the engine's counts have no zero edges).
      if (from !== null && shard.edges.get(`${from}->${to}`) === 0) shard.edges.delete(`${from}->${to}`);
    }
    if (from !== null) shard.step(from).orInPlace(users);
    if (!(to === EXITED ? from === null : this.workflow.isEntry(from, to))) return;
    shard.entered -= count;
    if (this.workflow.holdout) shard.holdoutEntered -= heldOutUsers(this.workflow.holdout, users).size;
  }
}
