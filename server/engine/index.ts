// The engine's public face, and the only engine file routes import: what routes, the procedure runner, boot and
// tests call. Plain TypeScript (no next/react).
//
// EventLog rows (written by ingest, read here): one row per (tenant, partition) per ingested batch:
//   { tenantId, partition, offset: 1, 2, 3… per partition (committed in order), events: { user, type, data, time
//     (epoch ms) } in arrival order, in the byte format of log-codec.ts, count }. Rows a partition had applied an hour earlier are
//     deleted by the hourly housekeeping, except each partition's newest (ingest numbers the next row from it).
// PartitionState (written here): the offset applied so far, plus the owner lease (owner, epoch, leaseUntilMs) that
// fences every batch commit.
// Journal rows (written here, read by notifications): one row per move, in one transaction with the partition offset:
//   { seq (global, monotonic, in commit order), tenantId, instanceId, partition, fromStep (null when a user enters
//     the entry step at start), toStep, user (single-user move) or bitmap (portable roaring, bulk move: start, timer,
//     ttl, bulk chains), count, leaveAction (of fromStep), enterAction (of toStep; for a parallel step its enterAction
//     followed by its actions, comma-separated), timeMs (engine clock) }.
// A direct chain is one row per hop. Update-crowd changes no journal (busybee: no notifications).
export type { EngineOptions } from './engine';
export type { EngineHandle } from './handle';
export { countsAsOf, stepUsersAsOf } from './as-of';
export { idempotencyKey, MAX_EVENT_ID_LENGTH, MAX_EVENT_TYPE_LENGTH, MAX_EVENTS_PER_BATCH } from './ingest';
export { DEDUPE_WINDOW_MS } from './ingest-dedupe';
export { REENTRY_MODES } from './types';
export { RECENT_ROWS } from './event-types';
export { recentEventTypes, type RecentEventTypes } from './event-types';
export { discardDeadLetter, getDeadLetter, listDeadLetters } from './dead-letter';
export { countsHistory, HISTORY_RESOLUTIONS, MAX_HISTORY_POINTS, type HistoryPoint } from './counts-history';
export type { Counts, InstanceView, SnapshotView, WhereIsUser, StartRequest, UpdateWorkflowRequest } from './types';
export type { PathPreview, PreviewEvent } from './preview';
