import type { LockKey } from './types';

// Lock keys are normalized (deduplicated, exclusive wins, sorted by key) so every procedure takes them in the same
// order; two holders conflict when they share a key and at least one of them holds it exclusively.

export function normalizeLockKeys(keys: LockKey[]): LockKey[] {
  const byKey = new Map<string, LockKey['mode']>();
  for (const { key, mode } of keys) {
    if (!key) throw new Error('A lock key must not be empty');
    if (mode !== 'shared' && mode !== 'exclusive') throw new Error(`Lock mode of "${key}" must be shared or exclusive`);
    byKey.set(key, byKey.get(key) === 'exclusive' ? 'exclusive' : mode);
  }
  return [...byKey.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([key, mode]) => ({ key, mode }));
}

/** The keys of `a` that conflict with `b` (both normalized). */
export function conflictingKeys(a: LockKey[], b: LockKey[]): string[] {
  const modes = new Map(b.map((lock) => [lock.key, lock.mode]));
  return a.filter((lock) => modes.has(lock.key) && (lock.mode === 'exclusive' || modes.get(lock.key) === 'exclusive')).map((lock) => lock.key);
}

/** A candidate in the lock queue: its queue position and whether it already holds its keys. */
export interface QueuedLocks {
  id: string;
  /** Ancestors first; a child inherits its root's queue position so it never waits behind a procedure its parent blocks. */
  order: readonly (string | number)[];
  keys: LockKey[];
  holding: boolean;
  /** Ids of this procedure's ancestors: they never block their own descendants. */
  ancestors: ReadonlySet<string>;
}

export function compareOrder(a: readonly (string | number)[], b: readonly (string | number)[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    if (a[i] !== b[i]) return a[i]! < b[i]! ? -1 : 1;
  }
  return a.length - b.length;
}

/**
 * Whether `candidate` may take its locks now: no conflicting procedure holds them, and no conflicting procedure queued
 * ahead of it is still waiting (FIFO per key, so a stream of shared holders never starves an exclusive waiter).
 */
export function mayAcquire(candidate: QueuedLocks, others: Iterable<QueuedLocks>): boolean {
  if (candidate.holding || candidate.keys.length === 0) return true;
  for (const other of others) {
    if (other.id === candidate.id || candidate.ancestors.has(other.id) || other.ancestors.has(candidate.id)) continue;
    if (conflictingKeys(candidate.keys, other.keys).length === 0) continue;
    if (other.holding || compareOrder(other.order, candidate.order) < 0) return false;
  }
  return true;
}
