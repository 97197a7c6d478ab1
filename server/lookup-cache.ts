// Short-lived caches for lookups every API call makes (API key → tenant, tenant reference → tenant). Without them a
// cheap in-memory call like per-step counts pays two or three database round trips. Changes made by this process
// (revoking a key, deleting a tenant) clear the entries at once; in a cluster the clear is announced to every other
// member (server/cluster/channel.ts), which clears its copy within milliseconds; entries also expire after
// LOOKUP_CACHE_MS. An app keeps one cache per name in its Database's local state (`database.local.lookupCache(name)`,
// server/storage/local-state.ts).

export const LOOKUP_CACHE_MS = 5_000;
/** The cluster notice of a cleared cache (its argument: the cache's name). */
export const LOOKUP_CACHE_CLEARED = 'lookup-cache-cleared';
const MAX_ENTRIES = 10_000;

export class LookupCache<V> {
  private readonly entries = new Map<string, { value: V; expires: number }>();

  constructor(
    readonly name: string,
    /** Tells the other members of the cluster that this cache was cleared here. */
    private readonly announceClear: () => void,
  ) {}

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

  /** After a change this process made: here, and on every other member of a cluster. */
  clear(): void {
    this.clearHere();
    this.announceClear();
  }

  /** A change another member made (or announced): this process's copy only. */
  clearHere(): void {
    this.entries.clear();
  }
}
