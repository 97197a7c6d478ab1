import { processNotice } from '../crowd/notice';

// Notice that a tenant was deleted (after the commit), so the engine stops its partition loops for it: a live loop
// would otherwise go on renewing and re-taking leases of a tenant that no longer exists.

const tenantDeleted = processNotice<[tenantId: string]>('tenant-deleted');

/** Subscribes to tenant deletions; returns the unsubscribe function. */
export const onTenantDeleted = tenantDeleted.subscribe;

/** Called after the delete is committed; a failing listener never fails the request. */
export const notifyTenantDeleted = tenantDeleted.notify;
