// Funnels: the users who passed through steps a, b, c… in that order (not necessarily one right after the other) in a
// time window, from the journal. reached[i] is the bitmap of users who entered steps[0..i] in order; each move into
// steps[i] adds its users AND reached[i-1] to reached[i] (for a step listed twice, the later place first, so one move
// counts once). Moves are taken in each user's order (seq order within the user's partition); single moves are
// gathered into one bitmap per step until a user repeats or a bulk move comes, and then applied as bitmap operations.
import { RoaringBitmap32 } from '../crowd/bitmap';
import type { Database } from '../storage/database';
import { readMoves, type BulkMove, type JournalScope, type MoveSink, type SingleMoves } from './journal-window';

export type FunnelStep = {
  step: string;
  users: number;
  /** users / the previous step's users (null for the first step, or when the previous step had none). */
  conversion: number | null;
  /** users / the first step's users (null when it had none). */
  ofFirst: number | null;
};

class FunnelSink implements MoveSink {
  readonly reached: RoaringBitmap32[];
  /** The places in the funnel of each of `distinct` (by its index there), last first. */
  private readonly places: number[][];
  /** Users gathered per step of `distinct`, and how many. */
  private readonly gathered: Uint32Array[];
  private readonly gatheredCount: Uint32Array;
  private readonly gatheredUsers = new Set<number>();

  constructor(
    steps: string[],
    readonly distinct: string[],
  ) {
    this.reached = steps.map(() => new RoaringBitmap32());
    this.places = distinct.map((step) => steps.flatMap((s, i) => (s === step ? [i] : [])).reverse());
    this.gathered = distinct.map(() => new Uint32Array(1024));
    this.gatheredCount = new Uint32Array(distinct.length);
  }

  private enter(step: number, users: RoaringBitmap32): void {
    for (const i of this.places[step]) {
      this.reached[i].orInPlace(i === 0 ? users : RoaringBitmap32.and(users, this.reached[i - 1]));
    }
  }

  /** Applies the gathered single moves: each user once, so their order among each other does not matter. */
  private flush(): void {
    for (let step = 0; step < this.distinct.length; step++) {
      if (this.gatheredCount[step] === 0) continue;
      this.enter(step, RoaringBitmap32.from(this.gathered[step].subarray(0, this.gatheredCount[step])));
      this.gatheredCount[step] = 0;
    }
    this.gatheredUsers.clear();
  }

  singles({ steps, users }: SingleMoves): void {
    for (let k = 0; k < users.length; k++) {
      const user = users[k];
      if (this.gatheredUsers.has(user)) this.flush();
      this.gatheredUsers.add(user);
      const step = steps[k];
      let list = this.gathered[step];
      if (this.gatheredCount[step] === list.length) {
        const grown = new Uint32Array(list.length * 2);
        grown.set(list);
        this.gathered[step] = list = grown;
      }
      list[this.gatheredCount[step]++] = user;
    }
  }

  bulk({ toStep, bitmap }: BulkMove): void {
    this.flush();
    const step = this.distinct.indexOf(toStep);
    if (step >= 0) this.enter(step, RoaringBitmap32.deserialize(bitmap, 'portable'));
  }

  endPartition(): void {
    this.flush();
  }
}

/** The funnel over `steps` (names already checked) of the instance's moves in the window. */
export async function funnelOf(database: Database, scope: JournalScope, steps: string[]): Promise<FunnelStep[]> {
  const distinct = [...new Set(steps)];
  const sink = new FunnelSink(steps, distinct);
  await readMoves(database, scope, sink, distinct);
  const counts = sink.reached.map((bitmap) => bitmap.size);
  const share = (part: number, whole: number | undefined) => (whole ? part / whole : null);
  return steps.map((step, i) => ({
    step,
    users: counts[i],
    conversion: i === 0 ? null : share(counts[i], counts[i - 1]),
    ofFirst: share(counts[i], counts[0]),
  }));
}
