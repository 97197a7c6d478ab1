// What one app keeps in memory beside its storage's rows: the notices of committed changes and where they are relayed,
// the lookup caches, and what the modules above keep of the rows (the profile indexes, the running lookup). It is
// built with the app's Database (server/create-app.ts) and reached through it: a module handed a Database has the
// state of that database's app, and a test that builds another app gets other state.
//
// Modules above keep theirs by name (`held`), not by a key object: Next.js bundles every route handler apart, each with
// its own copy of every module, and the copies must find the same state.
import { LOOKUP_CACHE_CLEARED, LookupCache } from '../lookup-cache';

type Relay = (name: string, args: unknown[]) => void;
type Listener = (...args: never[]) => void;

export class LocalState {
  /** Short-lived lookup caches by name (server/lookup-cache.ts): made by lookupCache(), cleared by the cluster channel. */
  readonly caches = new Map<string, LookupCache<unknown>>();
  /** Hands every notice of this thread to the engine thread as well (set by its client, server/engine/client.ts). */
  noticeRelay: Relay | undefined;
  /** Sends every notice of this process to the other members of its cluster (server/cluster/channel.ts). */
  clusterRelay: Relay | undefined;
  private readonly listeners = new Map<string, Set<Listener>>();
  private readonly kept = new Map<string, unknown>();

  /** Subscribes to the notice `name`; returns the unsubscribe function. */
  subscribe(name: string, listener: Listener): () => void {
    let held = this.listeners.get(name);
    if (!held) this.listeners.set(name, (held = new Set()));
    held.add(listener);
    return () => held.delete(listener);
  }

  /** A change committed here: its listeners in this process (both threads) and the other members are told. */
  notify(name: string, args: unknown[]): void {
    this.deliver(name, args);
    this.clusterRelay?.(name, args);
  }

  /** A notice another member made (or the other thread relayed): told here, not sent on to the cluster again. */
  deliver(name: string, args: unknown[]): void {
    for (const listener of this.listeners.get(name) ?? []) {
      try {
        (listener as (...given: unknown[]) => void)(...args);
      } catch (error) {
        console.error(`[crowdflow] ${name} listener failed`, error);
      }
    }
    this.noticeRelay?.(name, args);
  }

  /** This app's lookup cache `name` (server/lookup-cache.ts); its clears are announced to the cluster. */
  lookupCache<V>(name: string): LookupCache<V> {
    if (!this.caches.has(name)) this.caches.set(name, new LookupCache<unknown>(name, () => this.clusterRelay?.(LOOKUP_CACHE_CLEARED, [name])));
    return this.caches.get(name) as LookupCache<V>;
  }

  /** The state a module keeps under `name`, made by `create` on first use. */
  held<T>(name: string, create: () => T): T {
    if (!this.kept.has(name)) this.kept.set(name, create());
    return this.kept.get(name) as T;
  }
}
