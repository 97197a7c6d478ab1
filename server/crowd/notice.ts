// In-process notices of committed changes, so caches (the engine's crowd bitmaps) can drop their copy.
// The listeners live in the app's local state (server/storage/local-state.ts), reached through the Database a caller
// is handed: Next.js bundles each route handler (where changes are announced) apart from boot (where the engine starts
// and subscribes), each with its own copy of this module, and a set kept in a module variable would never connect the
// two. The engine thread has an app of its own: its client relays every notice there too. In a cluster every notice
// also goes to the other members through LISTEN/NOTIFY (server/cluster/channel.ts), where it is delivered as if made
// there.
import type { Database } from '../storage/database';

export type Notice<Args extends unknown[]> = {
  /** Subscribes; returns the unsubscribe function. */
  subscribe(database: Database, listener: (...args: Args) => void): () => void;
  /** Called after the change is committed. A failing listener is logged and never fails the caller. */
  notify(database: Database, ...args: Args): void;
};

export function processNotice<Args extends unknown[]>(name: string): Notice<Args> {
  // Closures, not methods: callers hand `notify` around on its own (export const notifyX = notice.notify).
  return {
    subscribe: (database, listener) => database.local.subscribe(name, listener as unknown as (...args: never[]) => void),
    notify: (database, ...args) => database.local.notify(name, args),
  };
}
