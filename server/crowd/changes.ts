import { processNotice } from './notice';

// Notice that a crowd's members changed, so caches of crowd bitmaps (the engine's inCrowd) drop their copy.

export type CrowdChange = 'saved' | 'deleted';

const crowdChanged = processNotice<[tenantId: string, name: string, change: CrowdChange]>('crowd-changed');

/** Subscribes to crowd changes; returns the unsubscribe function. */
export const onCrowdChanged = crowdChanged.subscribe;

/** Called after the change is committed; a failing listener never fails the request. */
export const notifyCrowdChanged = crowdChanged.notify;
