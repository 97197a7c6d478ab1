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

export function compareOrder(a: readonly (string | number)[], b: readonly (string | number)[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    if (a[i] !== b[i]) return a[i]! < b[i]! ? -1 : 1;
  }
  return a.length - b.length;
}

/**
 * The keys taken so far while walking the procedures in queue order: first by every holder, then by each waiter in turn
 * (FIFO per key, so a stream of shared holders never starves an exclusive waiter). A waiter may take its locks when none
 * of its keys conflicts with what is taken. A child never conflicts with its ancestors (refused up front), and inherits
 * its root's queue position, so it never waits behind a procedure that waits for its parent.
 */
export class LockTable {
  private readonly taken = new Map<string, { exclusive: boolean; shared: boolean }>();

  take(keys: LockKey[]): void {
    for (const { key, mode } of keys) {
      const entry = this.taken.get(key) ?? { exclusive: false, shared: false };
      entry[mode] = true;
      this.taken.set(key, entry);
    }
  }

  conflicts(keys: LockKey[]): boolean {
    return keys.some(({ key, mode }) => {
      const entry = this.taken.get(key);
      return entry !== undefined && (entry.exclusive || (mode === 'exclusive' && entry.shared));
    });
  }
}
