// Moving users between steps, one user or a whole bitmap at a time. Entering a step runs it through ONE exhaustive
// switch on its kind: direct/parallel/split move on at once (one journaled move per hop), and so does a branch step
// that routes on entry (entry-routing.ts) for the users one of its branches takes; other branch steps, timer, delay
// and terminal steps keep the user (delay steps and branch steps with a timeout also in an entry-time bucket). Every
// move carries the leave tag of its source and the enter tags of its target. A "move" to the step a user rests in is
// none. Users of a bulk move who meet exit criteria that read no event leave the journey instead of moving (exit.ts).
import { compactBytes, RoaringBitmap32 } from '../crowd/bitmap';
import { bucketEnd, bucketsOf, type Buckets, type Shard } from './shard';
import type { EntryRouting } from './entry-routing';
import { EXITED } from './exit';
import { splitPath, type StepRuntime, type WorkflowRuntime } from './runtime';
import type { JournalMove } from '../storage/journal/commit';
import { MAX_STEPS } from '../../core/model/validate';

/**
 * Chains are followed to their end: validation refuses loops of steps that move users on at once, so a chain has
 * fewer than MAX_STEPS hops. More can only be a loop in a version saved before that rule; the users then rest
 * where the loop is cut, and the engine log says so (throwing would fail the partition on every retry).
 */
const MAX_HOPS = MAX_STEPS;

function loopCut(step: string): void {
  console.error(`[crowdflow] users entering step "${step}" moved on ${MAX_HOPS} times in one go (a loop of direct, split or parallel steps); they rest there`);
}

export class Mover {
  /**
   * Everyone in the shard was checked against the exit criteria at this moment (a timer firing's sweep, exit.ts): the
   * bulk moves that follow need not check the same users again.
   */
  exitsChecked = false;

  constructor(
    readonly workflow: WorkflowRuntime,
    readonly shard: Shard,
    readonly moves: JournalMove[],
    readonly now: number,
    /** Routes users entering a branch step that routes on entry (entryRouting(), loaded for this workflow). */
    readonly routing: EntryRouting,
  ) {}

  /**
   * Moves one user out of `from` (a step it rests in, or null when it enters the instance) into `to`. Returns where it
   * rests. A move to the step the user is in is no move: nothing is journaled or counted, and the user keeps its
   * entry time (a branch's timeout and ttl are not restarted).
   */
  moveUser(user: number, from: string | null, to: string): string {
    if (from === to) return to;
    if (from !== null) this.leaveUser(user, from);
    return this.enter(new OneUser(user), from, to, 0);
  }

  /** Moves a bitmap of users resting in `from` (or new to the instance) into `to`, as bulk moves; `from` = `to` is no move. */
  moveBulk(users: RoaringBitmap32, from: string | null, to: string): void {
    if (users.size === 0 || from === to) return;
    if (from !== null) this.leaveBulk(users, from);
    this.enter(new ManyUsers(users), from, to, 0);
  }

  /**
   * Moves users of `from` whose delay buckets were just taken out of the shard (a delay ending, a branch's timeout)
   * into `to`. A user rests in one delay bucket of its step, so the step's other delay buckets cannot hold them: only
   * the step and its ttl buckets lose them, not every bucket still waiting (one per minute of a 2-day timeout: 2,880).
   */
  moveOutOfDelay(users: RoaringBitmap32, from: string, to: string): void {
    if (users.size === 0 || from === to) return;
    this.shard.step(from).andNotInPlace(users);
    for (const bitmap of this.shard.ttls.get(from)?.values() ?? []) bitmap.andNotInPlace(users);
    this.enter(new ManyUsers(users), from, to, 0);
  }

  /** Users that left `from` by other means (a removed step of an older version) arrive at `to`, journaled from `from`. */
  arriveBulk(users: RoaringBitmap32, from: string, to: string): void {
    if (users.size > 0) this.enter(new ManyUsers(users), from, to, 0);
  }

  leaveUser(user: number, from: string): void {
    const shard = this.shard;
    shard.step(from).remove(user);
    for (const buckets of [shard.delays.get(from), shard.ttls.get(from)]) if (buckets) for (const bitmap of buckets.values()) bitmap.remove(user);
  }

  leaveBulk(users: RoaringBitmap32, from: string): void {
    const shard = this.shard;
    shard.step(from).andNotInPlace(users);
    for (const buckets of [shard.delays.get(from), shard.ttls.get(from)]) if (buckets) for (const bitmap of buckets.values()) bitmap.andNotInPlace(users);
  }

  /** `user`, resting in `from`, met the exit criteria on one of its events: it leaves the journey (exit.ts). */
  exitUser(user: number, from: string): void {
    this.leaveUser(user, from);
    this.recordExit(from, new OneUser(user));
  }

  /** `users`, resting in `from`, met the exit criteria at a timer firing: they leave the journey. */
  exitBulk(users: RoaringBitmap32, from: string): void {
    if (users.size === 0) return;
    this.leaveBulk(users, from);
    this.recordExit(from, new ManyUsers(users));
  }

  /**
   * Journals an exit: a move to EXITED carrying no action tag (no later step's actions, and no leave action: the user
   * did not move on). `from` null: users met the criteria as they entered the instance; they count as entered, and as
   * exited from the entry step.
   */
  private recordExit(from: string | null, leaving: Arrivals): void {
    const users = leaving instanceof OneUser ? leaving.user : (leaving as ManyUsers).users;
    this.moves.push({
      instanceId: this.shard.instanceId,
      partition: this.shard.partition,
      fromStep: from,
      toStep: EXITED,
      user: typeof users === 'number' ? users : null,
      bitmap: typeof users === 'number' ? null : compactBytes(users),
      count: leaving.count,
      leaveAction: null,
      enterAction: null,
      timeMs: this.now,
    });
    this.shard.exit(from ?? this.workflow.entry, users);
    if (from === null) this.shard.countEntry(users, leaving.count, this.workflow.holdout);
  }

  private record(from: string | null, to: string, arrivals: Arrivals): void {
    this.moves.push({
      instanceId: this.shard.instanceId,
      partition: this.shard.partition,
      fromStep: from,
      toStep: to,
      user: arrivals instanceof OneUser ? arrivals.user : null,
      bitmap: arrivals instanceof ManyUsers ? compactBytes(arrivals.users) : null,
      count: arrivals.count,
      leaveAction: from === null ? null : (this.workflow.steps.get(from)?.step.leaveAction ?? null),
      enterAction: this.workflow.get(to).enterTags,
      timeMs: this.now,
    });
    this.shard.countEdge(from, to, arrivals.count);
    const users = arrivals instanceof OneUser ? arrivals.user : (arrivals as ManyUsers).users;
    if (this.workflow.isEntry(from, to)) this.shard.countEntry(users, arrivals.count, this.workflow.holdout);
    if (this.workflow.isExperimentPath(from, to)) this.shard.tookPath(from, to, users);
  }

  /**
   * THE step switch: `arrivals` enter `to`, and move on at once or rest there. Returns where they rest. The users of a
   * bulk move (not of the hops it makes at once: the same users at the same moment) who meet exit criteria over
   * bitmaps leave the journey from `from` instead; one user moves on an event, which its exit criteria saw first.
   */
  private enter(arrivals: Arrivals, from: string | null, to: string, hops: number): string {
    if (hops === 0 && arrivals instanceof ManyUsers && !(this.exitsChecked && from !== null)) {
      const leaving = this.routing.exiting(arrivals.users, this.now);
      if (leaving.isEmpty) leaving.dispose();
      else {
        // recordExit serializes `leaving` and ORs it into the shard's bitmaps: nothing keeps it, so it is freed here.
        this.recordExit(from, new ManyUsers(leaving));
        const everyone = leaving.size === arrivals.count;
        const staying = everyone ? null : RoaringBitmap32.andNot(arrivals.users, leaving);
        leaving.dispose();
        if (!staying) return to;
        // Ours too: whatever keeps these users copies them (see ManyUsers), so it is freed once they have moved.
        return disposedAfter(staying, () => this.moveOn(new ManyUsers(staying), from, to, hops));
      }
    }
    return this.moveOn(arrivals, from, to, hops);
  }

  /** The step switch proper, for arrivals the exit criteria have seen. */
  private moveOn(arrivals: Arrivals, from: string | null, to: string, hops: number): string {
    this.record(from, to, arrivals);
    const runtime = this.workflow.get(to);
    const step = runtime.step;
    if (hops >= MAX_HOPS) loopCut(to);
    else
      switch (step.kind) {
        case 'direct':
        case 'parallel':
          if (step.next) return this.enter(arrivals, to, step.next, hops + 1);
          break;
        case 'split': {
          // A path taking everyone (an experiment's winner) needs no hash per user.
          if (runtime.splitAll >= 0) return this.enter(arrivals, to, step.paths[runtime.splitAll].next, hops + 1);
          let rest = to;
          for (const [path, part] of arrivals.byPath((user) => splitPath(runtime, user), step.paths.length))
            rest = disposedAfter(part, () => this.enter(part, to, step.paths[path].next, hops + 1));
          return rest;
        }
        case 'branch':
          if (runtime.routesOnEntry) return this.route(arrivals, runtime, hops);
          break;
        case 'delay':
        case 'timer':
          break;
        default:
          return unreachable(step);
      }
    return this.rest(arrivals, runtime);
  }

  /**
   * Users entering a branch step that routes on entry: each moves on by the first branch that takes it; the rest
   * (and those a branch back to this step takes) wait in it, for their events, its ttl or its timeout.
   */
  private route(arrivals: Arrivals, runtime: StepRuntime, hops: number): string {
    const step = runtime.step as Extract<StepRuntime['step'], { kind: 'branch' }>;
    let at = step.name;
    for (const [branch, part] of arrivals.byBranch((users) => this.routing.route(runtime, users, this.now))) {
      const next = branch < 0 ? step.name : step.branches[branch].next;
      at = disposedAfter(part, () => (next === step.name ? this.rest(part, runtime) : this.enter(part, step.name, next, hops + 1)));
    }
    return at;
  }

  /** `arrivals` rest in the step (and in its entry-time buckets). */
  private rest(arrivals: Arrivals, runtime: StepRuntime): string {
    const to = runtime.step.name;
    arrivals.addTo(this.shard.step(to));
    if (runtime.delayMs) arrivals.addTo(this.bucketNow(this.shard.delays, to, runtime.delayBucketMs));
    if (runtime.ttlMs) arrivals.addTo(this.bucketNow(this.shard.ttls, to, runtime.ttlBucketMs));
    return to;
  }

  /** The step's bucket for users entering now. */
  bucketNow(map: Map<string, Buckets>, step: string, width: number): RoaringBitmap32 {
    const buckets = bucketsOf(map, step);
    const end = bucketEnd(this.now, width);
    let bucket = buckets.get(end);
    if (!bucket) buckets.set(end, (bucket = new RoaringBitmap32()));
    return bucket;
  }
}

/**
 * One user or a bitmap of users entering a step together: the step switch treats both alike. The groups byPath and
 * byBranch return are new bitmaps the caller owns and frees with dispose() once they have moved: every place that
 * keeps users (a step, its buckets, the exited, converted and path bitmaps) ORs or clones them, and the journal keeps
 * their serialized bytes. At 10M users each group is about a megabyte of native memory, which roaring reports to V8:
 * left to the collector, a start's groups set off major collections of the engine's large heap (issue 37's starts).
 */
interface Arrivals {
  readonly count: number;
  addTo(bitmap: RoaringBitmap32): void;
  /** The arrivals grouped by a per-user choice among `choices`, in choice order, empty groups left out. */
  byPath(choose: (user: number) => number, choices: number): Array<[number, Arrivals]>;
  /** The arrivals grouped by the branch that takes them (-1: none), from bitmaps per branch; empty groups left out. */
  byBranch(route: (users: RoaringBitmap32) => Routed): Array<[number, Arrivals]>;
  /** Frees a group byPath or byBranch returned (one user holds no bitmap). */
  dispose(): void;
}

type Routed = ReturnType<EntryRouting['route']>;

class OneUser implements Arrivals {
  readonly count = 1;
  constructor(readonly user: number) {}
  addTo(bitmap: RoaringBitmap32): void {
    bitmap.add(this.user);
  }
  byPath(choose: (user: number) => number): Array<[number, Arrivals]> {
    return [[choose(this.user), this]];
  }
  byBranch(route: (users: RoaringBitmap32) => Routed): Array<[number, Arrivals]> {
    // The same bitmap plans as a crowd's: one user routes exactly as it would among many.
    const one = RoaringBitmap32.of(this.user);
    const { taken, rest } = route(one);
    const branch = taken.findIndex((users) => users.has(this.user));
    for (const bitmap of [one, ...taken, rest]) bitmap.dispose();
    return [[branch, this]];
  }
  dispose(): void {}
}

class ManyUsers implements Arrivals {
  constructor(readonly users: RoaringBitmap32) {}
  get count(): number {
    return this.users.size;
  }
  addTo(bitmap: RoaringBitmap32): void {
    bitmap.orInPlace(this.users);
  }
  byPath(choose: (user: number) => number, choices: number): Array<[number, Arrivals]> {
    return nonEmpty([...splitBitmap(this.users, choose, choices).entries()]);
  }
  byBranch(route: (users: RoaringBitmap32) => Routed): Array<[number, Arrivals]> {
    const { taken, rest } = route(this.users);
    return nonEmpty([...taken.entries(), [-1, rest]]);
  }
  /** Only for a group of byPath or byBranch: other ManyUsers wrap a bitmap their caller owns. */
  dispose(): void {
    this.users.dispose();
  }
}

/** Groups of users (new bitmaps) as arrivals, the empty ones freed and left out. */
function nonEmpty(groups: Array<[number, RoaringBitmap32]>): Array<[number, Arrivals]> {
  return groups.flatMap(([i, users]): Array<[number, Arrivals]> => {
    if (users.size > 0) return [[i, new ManyUsers(users)]];
    users.dispose();
    return [];
  });
}

/** `work(owned)`, then `owned` (a temporary of this move that nothing else keeps) is freed, also when `work` throws. */
function disposedAfter<T>(owned: { dispose(): unknown }, work: () => T): T {
  try {
    return work();
  } finally {
    owned.dispose();
  }
}

/** Splits a bitmap by a per-user choice into `parts` bitmaps (one pass over the ids, built from sorted arrays). */
function splitBitmap(users: RoaringBitmap32, choose: (user: number) => number, parts: number): RoaringBitmap32[] {
  const ids = users.toUint32Array();
  const choice = new Uint8Array(ids.length);
  const counts = new Array<number>(parts).fill(0);
  for (let i = 0; i < ids.length; i++) counts[(choice[i] = choose(ids[i]))]++;
  const arrays = counts.map((n) => new Uint32Array(n));
  const fill = new Array<number>(parts).fill(0);
  for (let i = 0; i < ids.length; i++) arrays[choice[i]][fill[choice[i]]++] = ids[i];
  return arrays.map((array) => RoaringBitmap32.from(array));
}

function unreachable(value: never): never {
  throw new Error(`Unknown step kind ${JSON.stringify(value)}`);
}
