// Long engine work (a start over 10M users, a crowd update, a new version over every shard, a batch of events, a
// per-user timer condition) runs in slices: the engine's one thread serves every tenant, and a start done in one go
// held it 300+ ms, during which no other tenant's event, timer or request was served. A slice is measured on the
// process's monotonic clock, not the engine's Clock: it is thread time spent, not journey time.
//
// Between slices the work waits for its tenant's next turn (FairTurns): tenants with work waiting take turns one slice
// each, round-robin, and each turn is a turn of the event loop, so new messages and I/O are served in between. Yielding
// with a bare setImmediate was fair between TASKS, so a tenant running eight partitions' backlogs got eight slices for
// every one of a tenant with one; per tenant, one tenant's backlog delays another's work by about a slice.
import { RoaringBitmap32 } from '../crowd/bitmap';

/** Work done before the operation yields: the other tenants' requests wait at most about this long for it. */
export const SLICE_MS = 10;

/**
 * The engine thread's turns, shared round-robin between the tenants that have work waiting; within a tenant, first
 * come first served.
 */
export class FairTurns {
  /** Tenants waiting for a turn, in the order they get one (a Map keeps insertion order: the ring). */
  private readonly waiting = new Map<string, Array<() => void>>();
  private granting = false;

  /** Resolves when it is `tenant`'s turn: after one turn of every tenant that asked before it. */
  next(tenant: string): Promise<void> {
    return new Promise((resolve) => {
      const queue = this.waiting.get(tenant);
      if (queue) queue.push(resolve);
      else this.waiting.set(tenant, [resolve]);
      this.scheduleGrant();
    });
  }

  /** Tenants with work waiting for a turn. */
  get waitingTenants(): number {
    return this.waiting.size;
  }

  private scheduleGrant(): void {
    if (this.granting) return;
    this.granting = true;
    setImmediate(() => this.grant());
  }

  private grant(): void {
    this.granting = false;
    const first = this.waiting.entries().next();
    if (first.done) return;
    const [tenant, queue] = first.value;
    this.waiting.delete(tenant);
    const resume = queue.shift()!;
    if (queue.length > 0) this.waiting.set(tenant, queue); // to the back of the ring
    resume();
    if (this.waiting.size > 0) this.scheduleGrant();
  }
}

export class Slices {
  private sliceStart = performance.now();

  /** The work of `tenant`, waiting for its turns between slices. */
  constructor(
    private readonly turns: FairTurns,
    private readonly tenant: string,
  ) {}

  /** Whether this slice has run SLICE_MS: a check cheap enough for every few items of a tight loop. */
  get due(): boolean {
    return performance.now() - this.sliceStart >= SLICE_MS;
  }

  /** Waits for the next turn once this slice has run SLICE_MS; call it between units of work. */
  async boundary(): Promise<void> {
    if (!this.due) return;
    await this.yield();
  }

  /** Waits for the next turn now, however short the slice was (between pages of I/O-bound work). */
  async yield(): Promise<void> {
    await this.turns.next(this.tenant);
    this.sliceStart = performance.now();
  }
}

/** `work` for each item, yielding at slice boundaries between items. */
export async function inSlices<T, R>(slices: Slices, items: readonly T[], work: (item: T, index: number) => R): Promise<R[]> {
  const results: R[] = [];
  for (const [index, item] of items.entries()) {
    results.push(work(item, index));
    await slices.boundary();
  }
  return results;
}

/**
 * The union of `bitmaps` (a new bitmap the caller frees), one OR between slice boundaries: the eight shards of a
 * 2^27-user step ORed at once held the thread ~50 ms (a stop's snapshot, an export of a running instance).
 */
export async function unionInSlices(slices: Slices, bitmaps: readonly RoaringBitmap32[]): Promise<RoaringBitmap32> {
  const union = new RoaringBitmap32();
  for (const bitmap of bitmaps) {
    union.orInPlace(bitmap);
    await slices.boundary();
  }
  return union;
}
