import { processNotice } from '../crowd/notice';

// Notice that profiles changed (committed upserts and deletes), for in-memory profile indexes.

const profilesChanged = processNotice<[tenantId: string, users: number[]]>('profiles-changed');

/** Subscribes to committed profile upserts and deletes; returns the unsubscribe function. */
export const onProfilesChanged = profilesChanged.subscribe;

/** Called after the change is committed; a failing listener never fails the request. */
export const notifyProfilesChanged = profilesChanged.notify;
