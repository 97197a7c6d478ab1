// In-process notice that a crowd's members changed, so caches of crowd bitmaps (the engine's inCrowd) can drop
// their copy. Only this process hears it: other processes of a scale-out deployment must re-read by updatedAt.

export type CrowdChange = 'saved' | 'deleted';
type Listener = (tenantId: string, name: string, change: CrowdChange) => void;

const listeners = new Set<Listener>();

/** Subscribes to crowd changes; returns the unsubscribe function. */
export function onCrowdChanged(listener: Listener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** Called after the change is committed. A failing listener is logged and never fails the request. */
export function notifyCrowdChanged(tenantId: string, name: string, change: CrowdChange): void {
  for (const listener of listeners) {
    try {
      listener(tenantId, name, change);
    } catch (error) {
      console.error('[crowdflow] crowd change listener failed', error);
    }
  }
}
