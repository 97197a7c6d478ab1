// Short-lived caches for lookups every API call makes (API key → tenant, tenant reference → tenant). Without them a
// cheap in-memory call like per-step counts pays two or three database round trips. Changes made by this process
// (revoking a key, deleting a tenant) clear the entries at once; another server process sharing the database sees
// them after at most LOOKUP_CACHE_MS.
import { runtime } from './runtime';

export const LOOKUP_CACHE_MS = 5_000;
const MAX_ENTRIES = 10_000;

export class LookupCache<V> {
  private readonly entries = new Map<string, { value: V; expires: number }>();

  get(key: string, now = Date.now()): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.expires > now) return entry.value;
    this.entries.delete(key);
    return undefined;
  }

  set(key: string, value: V, now = Date.now()): void {
    if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
    this.entries.set(key, { value, expires: now + LOOKUP_CACHE_MS });
  }

  clear(): void {
    this.entries.clear();
  }
}

/** One cache per name and process (route handlers are separate bundles; the process runtime is what they share). */
export function lookupCache<V>(name: string): LookupCache<V> {
  const caches = runtime().caches;
  if (!caches.has(name)) caches.set(name, new LookupCache<unknown>());
  return caches.get(name) as LookupCache<V>;
}
