// In-process notices of committed changes, so caches (the engine's crowd bitmaps) can drop their copy.
// The listeners live in the process runtime (server/runtime.ts): Next.js bundles instrumentation (where the engine
// starts and subscribes) and each route handler (where changes are announced) apart, each with its own copy of this
// module, and a set kept in a module variable would never connect the two. The engine thread has a runtime of its
// own: its client relays every notice there too. In a cluster every notice also goes to the other members through
// LISTEN/NOTIFY (server/cluster/channel.ts), where it is delivered as if made there.
import { runtime } from '../runtime';

export type Notice<Args extends unknown[]> = {
  /** Subscribes; returns the unsubscribe function. */
  subscribe(listener: (...args: Args) => void): () => void;
  /** Called after the change is committed. A failing listener is logged and never fails the caller. */
  notify(...args: Args): void;
  /** A notice another cluster member made: delivered in this process (both threads), not sent on again. */
  deliver(...args: Args): void;
};

export function processNotice<Args extends unknown[]>(name: string): Notice<Args> {
  const notices = runtime().notices;
  if (!notices.has(name)) notices.set(name, new Set());
  const listeners = notices.get(name) as Set<(...args: Args) => void>;
  // Closures, not methods: callers hand `notify` around on its own (export const notifyX = notice.notify).
  const deliver = (...args: Args) => {
    for (const listener of listeners) {
      try {
        listener(...args);
      } catch (error) {
        console.error(`[crowdflow] ${name} listener failed`, error);
      }
    }
    runtime().noticeRelay?.(name, args);
  };
  return {
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    notify(...args) {
      deliver(...args);
      runtime().clusterRelay?.(name, args);
    },
    deliver,
  };
}
