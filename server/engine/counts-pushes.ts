// Counts pushes (the counts stream, SSE): one push per instance per 100 ms at most, with the latest counts. At once
// when the last push is that old, so a lone change is seen within a few ms; else 100 ms after it, so a burst of
// commits costs one push. The in-thread engine and the engine thread's client (server/engine/client.ts) both push
// through it, each reading the counts its own way.
import type { Counts, CountsListener } from './types';

const COUNTS_PUSH_MS = 100;

/** The counts to push now; undefined pushes nothing (the instance is gone, or a partition is moving). */
export type CountsRead = () => Counts | undefined | Promise<Counts | undefined>;

export class CountsPushes {
  private readonly listeners = new Map<string, Set<CountsListener>>();
  private readonly pending = new Map<string, ReturnType<typeof setTimeout>>();
  private readonly lastPushAt = new Map<string, number>();
  /** Told of every change of any instance, at once (the webhook pump: new journal moves to cut). */
  private readonly anyChange = new Set<() => void>();

  /** `listener` is told at once of every change of any instance's counts. */
  onAnyChange(listener: () => void): () => void {
    this.anyChange.add(listener);
    return () => void this.anyChange.delete(listener);
  }

  subscribe(instanceId: string, listener: CountsListener): () => void {
    let set = this.listeners.get(instanceId);
    if (!set) this.listeners.set(instanceId, (set = new Set()));
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size > 0) return;
      this.listeners.delete(instanceId);
      this.lastPushAt.delete(instanceId);
    };
  }

  /** The instance's counts changed: its listeners get `read()` at once or with the next coalesced push. */
  changed(instanceId: string, read: CountsRead): void {
    for (const listener of this.anyChange) listener();
    if (!this.listeners.get(instanceId)?.size || this.pending.has(instanceId)) return;
    const wait = Math.max(0, (this.lastPushAt.get(instanceId) ?? Number.NEGATIVE_INFINITY) + COUNTS_PUSH_MS - performance.now());
    this.pending.set(
      instanceId,
      setTimeout(() => {
        this.pending.delete(instanceId);
        this.lastPushAt.set(instanceId, performance.now());
        Promise.resolve()
          .then(read)
          .then(
            (counts) => {
              if (counts) for (const listener of this.listeners.get(instanceId) ?? []) listener(counts);
            },
            () => undefined,
          );
      }, wait),
    );
  }

  /** Drops the pushes not sent yet (the engine stops). */
  clear(): void {
    for (const timer of this.pending.values()) clearTimeout(timer);
    this.pending.clear();
  }
}
