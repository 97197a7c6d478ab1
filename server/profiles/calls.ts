// The profile operations that write or read a tenant's profile index, bound to one Database. They run where the
// engine runs (EngineHandle.profiles): in the engine thread when there is one, so the process keeps ONE index per
// tenant (the engine's, which conditions read) and every write of it takes that index's turn. The request thread
// then holds no copy: an import's chunks are written and applied once, beside the partitions, and the thread that
// answers HTTP only carries the body across (server/engine/profile-import-stream.ts).
import type { z } from 'zod';
import type { WorkflowDefinition } from '../../core/model/workflow';
import type { Database } from '../storage/database';
import { estimateAudience, type AudienceBody } from './audience';
import { describeProfileColumns, readProfileColumns, type ColumnSpec } from './columns';
import { explainWorkflow } from './explain';
import { profileFieldsWithMemory } from './fields-memory';
import { importProfiles, type ImportFormat } from './import';
import { deleteProfile, upsertProfiles, type UpsertProfilesBody } from './profiles';
import { quietZoneGroups, type QuietZoneRequest } from './zones';

/**
 * `turns`: the engine thread's (its FairTurns, server/engine/slices.ts), whose turns the ad hoc queries (audience,
 * explain; deadline.ts) and the writes (an import's parse, a write's index update; index-store.ts) wait for between
 * slices, as the tenant's other long work does.
 */
export function profileCalls(database: Database, turns?: { next(tenant: string): Promise<void> }) {
  const nextTurn = (tenantId: string) => (turns ? () => turns.next(tenantId) : undefined);
  return {
    importProfiles: (tenantId: string, body: ReadableStream<Uint8Array> | null, format: ImportFormat, columnTypes: string | null = null) =>
      importProfiles(database, tenantId, body, format, columnTypes, nextTurn(tenantId)),
    upsertProfiles: (tenantId: string, items: z.infer<typeof UpsertProfilesBody>) => upsertProfiles(database, tenantId, items, nextTurn(tenantId)),
    deleteProfile: (tenantId: string, user: number) => deleteProfile(database, tenantId, user),
    estimateAudience: (tenantId: string, body: z.infer<typeof AudienceBody>) => estimateAudience(database, tenantId, body, { turn: nextTurn(tenantId) }),
    explainWorkflow: (tenantId: string, definition: WorkflowDefinition) => explainWorkflow(database, tenantId, definition, { turn: nextTurn(tenantId) }),
    profileFields: (tenantId: string) => profileFieldsWithMemory(database, tenantId),
    describeProfileColumns: (tenantId: string, names: string[]) => describeProfileColumns(database, tenantId, names),
    readProfileColumns: (tenantId: string, columns: ColumnSpec[], ids: Uint32Array) => readProfileColumns(database, tenantId, columns, ids),
    quietZoneGroups: (tenantId: string, request: QuietZoneRequest) => quietZoneGroups(database, tenantId, request),
  };
}

export type ProfileCalls = ReturnType<typeof profileCalls>;

/** The calls the engine thread answers as they are (structured-cloneable arguments and results); the import streams. */
export const FORWARDED_PROFILE_CALLS = [
  'upsertProfiles',
  'deleteProfile',
  'estimateAudience',
  'explainWorkflow',
  'profileFields',
  'describeProfileColumns',
  'readProfileColumns',
  'quietZoneGroups',
] as const;
