import { processNotice } from '../crowd/notice';

// Notice that a workflow's schedule may have changed (a save that carried a schedule, a delete), after the commit, so
// the scheduler reads the schedules again now instead of at its slow safety re-read (./scheduler.ts). It lives beside the
// scheduler, the layer below the workflows that announce it.
// In a cluster it reaches every member's scheduler through the cluster channel.

const scheduleChanged = processNotice<[tenantId: string, workflowId: string]>('schedule-changed');

/** Subscribes to schedule changes; returns the unsubscribe function. */
export const onScheduleChanged = scheduleChanged.subscribe;

/** Called after the change is committed; a failing listener never fails the request. */
export const notifyScheduleChanged = scheduleChanged.notify;
