// Funnels: the users who passed through steps a, b, c… in that order (not necessarily one right after the other) in a
// time window, from the journal. reached[i] is the bitmap of users who entered steps[0..i] in order; each move into
// steps[i] adds its users AND reached[i-1] to reached[i] (for a step listed twice, the later place first, so one move
// counts once). Moves are taken in each user's order (seq order within the user's partition); single moves are
// gathered into one bitmap per step until a user repeats or a bulk move comes, and then applied as bitmap operations.
import { RoaringBitmap32 } from '../crowd/bitmap';
import type { Database } from '../storage/database';
import { readMoves, type BulkMove, type MoveSink, type SingleMoves, type TimeWindow } from './journal-window';

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
  /** The places of each step in the funnel, last first. */
  private readonly places = new Map<string, number[]>();
  private readonly gathered = new Map<string, number[]>();
  private readonly gatheredUsers = new Set<number>();

  constructor(steps: string[]) {
    this.reached = steps.map(() => new RoaringBitmap32());
    steps.forEach((step, i) => this.places.set(step, [i, ...(this.places.get(step) ?? [])]));
  }

  private enter(step: string, users: RoaringBitmap32): void {
    for (const i of this.places.get(step) ?? []) {
      this.reached[i].orInPlace(i === 0 ? users : RoaringBitmap32.and(users, this.reached[i - 1]));
    }
  }

  /** Applies the gathered single moves: each user once, so their order among each other does not matter. */
  private flush(): void {
    for (const [step, users] of this.gathered) this.enter(step, RoaringBitmap32.from(users));
    this.gathered.clear();
    this.gatheredUsers.clear();
  }

  singles({ toSteps, users }: SingleMoves): void {
    for (let i = 0; i < users.length; i++) {
      const user = users[i];
      if (this.gatheredUsers.has(user)) this.flush();
      this.gatheredUsers.add(user);
      const list = this.gathered.get(toSteps[i]);
      if (list) list.push(user);
      else this.gathered.set(toSteps[i], [user]);
    }
  }

  bulk({ toStep, bitmap }: BulkMove): void {
    this.flush();
    this.enter(toStep, RoaringBitmap32.deserialize(bitmap, 'portable'));
  }

  endPartition(): void {
    this.flush();
  }
}

/** The funnel over `steps` (names already checked) of the instance's moves in the window. */
export async function funnelOf(database: Database, instanceId: string, partitions: number, steps: string[], window: TimeWindow): Promise<FunnelStep[]> {
  const sink = new FunnelSink(steps);
  await readMoves(database, instanceId, partitions, window, sink, [...new Set(steps)]);
  const counts = sink.reached.map((bitmap) => bitmap.size);
  const share = (part: number, whole: number | undefined) => (whole ? part / whole : null);
  return steps.map((step, i) => ({
    step,
    users: counts[i],
    conversion: i === 0 ? null : share(counts[i], counts[i - 1]),
    ofFirst: share(counts[i], counts[0]),
  }));
}
