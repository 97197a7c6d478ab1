// When each partition's next checkpoint is due, for the whole engine: one sleeping loop for the process instead of a
// timer per partition. A minute's firing over 1,000 tenants gives 8,000 partitions their first moves since a
// checkpoint; each used to wake its own loop to plan a sleep (8,000 aborted signals, timers and listeners a minute).
// Now each plans a time here, a heap push, and the partitions due at the same moment are handed their checkpoint in
// one turn, so the CommitGroup commits them together.
import { LoopIdle, Wakeup, type Clock } from '../clock';

/** A partition whose checkpoint can come due. */
export interface CheckpointDue {
  /** Writes the checkpoint if it is still due (errors are the partition's to handle). */
  checkpointDue(): void;
}

export class CheckpointSchedule {
  /** When each planned partition is due: the heap may hold older entries of a partition, skipped when popped. */
  private readonly planned = new Map<CheckpointDue, number>();
  private heap: { at: number; partition: CheckpointDue }[] = [];
  private readonly wakeup = new Wakeup();
  private readonly idle: LoopIdle;
  private loop: Promise<void> | undefined;
  private running = false;

  constructor(private readonly clock: Clock) {
    this.idle = new LoopIdle(clock);
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.idle.started();
    this.loop = this.run().finally(() => this.idle.stopped());
  }

  async stop(): Promise<void> {
    this.running = false;
    this.wakeup.wake();
    await this.loop;
  }

  /** The partition's checkpoint is due at `at` (wall clock), unless an earlier time is planned already. */
  plan(partition: CheckpointDue, at: number): void {
    const current = this.planned.get(partition);
    if (current !== undefined && current <= at) return;
    this.planned.set(partition, at);
    this.push({ at, partition });
    if (this.heap[0].partition === partition && this.heap[0].at === at) this.wakeup.wake();
  }

  /** Forgets the partition's plan (it wrote its checkpoint, or stopped). */
  cancel(partition: CheckpointDue): void {
    this.planned.delete(partition);
  }

  /** Resolves once the loop sleeps until a later time of its clock (tests, after moving it). */
  settled(): Promise<void> {
    return this.idle.settled();
  }

  private async run(): Promise<void> {
    while (this.running) {
      const signal = this.wakeup.signal();
      const now = this.clock.now();
      for (const partition of this.takeDue(now)) partition.checkpointDue();
      const next = this.heap[0]?.at ?? Number.POSITIVE_INFINITY;
      await this.idle.sleep(next - now, signal);
    }
  }

  private takeDue(now: number): CheckpointDue[] {
    const due: CheckpointDue[] = [];
    while (this.heap.length > 0 && this.heap[0].at <= now) {
      const { at, partition } = this.pop();
      if (this.planned.get(partition) !== at) continue; // planned again earlier, or cancelled
      this.planned.delete(partition);
      due.push(partition);
    }
    return due;
  }

  private push(entry: { at: number; partition: CheckpointDue }): void {
    const heap = this.heap;
    heap.push(entry);
    for (let i = heap.length - 1; i > 0; ) {
      const parent = (i - 1) >> 1;
      if (heap[parent].at <= heap[i].at) break;
      [heap[parent], heap[i]] = [heap[i], heap[parent]];
      i = parent;
    }
  }

  private pop(): { at: number; partition: CheckpointDue } {
    const heap = this.heap;
    const top = heap[0];
    const last = heap.pop()!;
    if (heap.length > 0) {
      heap[0] = last;
      for (let i = 0; ; ) {
        const left = 2 * i + 1;
        const right = left + 1;
        let least = i;
        if (left < heap.length && heap[left].at < heap[least].at) least = left;
        if (right < heap.length && heap[right].at < heap[least].at) least = right;
        if (least === i) break;
        [heap[least], heap[i]] = [heap[i], heap[least]];
        i = least;
      }
    }
    return top;
  }
}
