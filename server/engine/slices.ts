// Long engine work (a start over 10M users, a crowd update, a new version over every shard) runs in slices: the
// engine's one thread serves every tenant, and a start done in one go held it 300+ ms, during which no other tenant's
// event, timer or request was served. Between slices the work yields a turn of the event loop, so the others' ready
// work runs in between (Node runs every ready callback before the next setImmediate). A slice is measured on the
// process's monotonic clock, not the engine's Clock: it is thread time spent, not journey time.
import { setImmediate as nextTurn } from 'node:timers/promises';

/** Work done before the operation yields: the other tenants' requests wait at most about this long for it. */
export const SLICE_MS = 10;

export class Slices {
  private sliceStart = performance.now();

  /** Whether this slice has run SLICE_MS: a check cheap enough for every few items of a tight loop. */
  get due(): boolean {
    return performance.now() - this.sliceStart >= SLICE_MS;
  }

  /** Yields a turn once this slice has run SLICE_MS; call it between units of work. */
  async boundary(): Promise<void> {
    if (!this.due) return;
    await nextTurn();
    this.sliceStart = performance.now();
  }
}

/** `work` for each item, yielding at slice boundaries between items. */
export async function inSlices<T, R>(items: readonly T[], work: (item: T, index: number) => R): Promise<R[]> {
  const slices = new Slices();
  const results: R[] = [];
  for (const [index, item] of items.entries()) {
    results.push(work(item, index));
    await slices.boundary();
  }
  return results;
}
