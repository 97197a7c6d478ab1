// In-process notice that profiles changed, so the engine can refresh its in-memory profile index. Only this
// process hears it: other processes of a scale-out deployment read profiles from the database.

type Listener = (tenantId: string, users: number[]) => void;

const listeners = new Set<Listener>();

/** Subscribes to committed profile upserts and deletes; returns the unsubscribe function. */
export function onProfilesChanged(listener: Listener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** Called after the change is committed. A failing listener is logged and never fails the request. */
export function notifyProfilesChanged(tenantId: string, users: number[]): void {
  for (const listener of listeners) {
    try {
      listener(tenantId, users);
    } catch (error) {
      console.error('[crowdflow] profile change listener failed', error);
    }
  }
}
