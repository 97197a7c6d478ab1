// In-process notices of committed changes, so caches (the engine's crowd bitmaps) can drop their copy.
// The listeners live in the thread's app state (server/app.ts): Next.js bundles each route handler (where changes are
// announced) apart from boot (where the engine starts and subscribes), each with its own copy of this module, and a
// set kept in a module variable would never connect the two. The engine thread has an app of its own: its client
// relays every notice there too. In a cluster every notice also goes to the other members through
// LISTEN/NOTIFY (server/cluster/channel.ts), where it is delivered as if made there.
import { app } from '../app';

export type Notice<Args extends unknown[]> = {
  /** Subscribes; returns the unsubscribe function. */
  subscribe(listener: (...args: Args) => void): () => void;
  /** Called after the change is committed. A failing listener is logged and never fails the caller. */
  notify(...args: Args): void;
  /** A notice another cluster member made: delivered in this process (both threads), not sent on again. */
  deliver(...args: Args): void;
};

export function processNotice<Args extends unknown[]>(name: string): Notice<Args> {
  // Looked up at each call, not here: notices are declared at module evaluation, before any app is registered.
  const listeners = (): Set<(...args: Args) => void> => {
    const notices = app().state.notices;
    if (!notices.has(name)) notices.set(name, new Set());
    return notices.get(name) as Set<(...args: Args) => void>;
  };
  // Closures, not methods: callers hand `notify` around on its own (export const notifyX = notice.notify).
  const deliver = (...args: Args) => {
    for (const listener of listeners()) {
      try {
        listener(...args);
      } catch (error) {
        console.error(`[crowdflow] ${name} listener failed`, error);
      }
    }
    app().state.noticeRelay?.(name, args);
  };
  return {
    subscribe(listener) {
      const held = listeners();
      held.add(listener);
      return () => held.delete(listener);
    },
    notify(...args) {
      deliver(...args);
      app().state.clusterRelay?.(name, args);
    },
    deliver,
  };
}
