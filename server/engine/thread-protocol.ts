// Messages between the request thread (server/engine/client.ts) and the engine thread (server/engine/thread.ts).
// One MessagePort carries both directions, in order: the engine publishes an instance's counts before it replies to
// anything after the commit that changed them, so a caller that awaited a reply already sees those counts.
import { AppError, type ErrorCode } from '../errors';
import { transientStorageCode } from '../storage/transient';
import { RetryLaterError } from '../procedures/types';
import type { RelayedProfileWrite } from '../profiles/index-tenant';
import type { FORWARDED_PROFILE_CALLS, ProfileCalls } from '../profiles/calls';
import type { ImportFormat, ImportResult } from '../profiles/import';
import type { Engine } from './engine';
import type { Counts, CountsCoverage, HoldoutGroup, StepUsers } from './types';

/** Engine methods the engine thread answers as they are (their arguments and results are structured-cloneable). */
export const FORWARDED_CALLS = [
  'getCounts',
  'liveCounts',
  'whereIsUser',
  'previewPath',
  'ingestPrepared',
  'materializeStart',
  'materializeStop',
  'materializeUpdateCrowd',
  'materializeUpdateWorkflow',
] as const;

/**
 * What the engine thread answers: the forwarded methods and profile calls, a step's users as portable roaring bytes,
 * a profile import whose body follows as `import-bytes` messages (server/engine/profile-import-stream.ts), and a clean stop.
 */
export type EngineCalls = Pick<Engine, (typeof FORWARDED_CALLS)[number]> &
  Pick<ProfileCalls, (typeof FORWARDED_PROFILE_CALLS)[number]> & {
    stepBitmap(tenantId: string, instanceId: string, step: string, users: StepUsers, group: HoldoutGroup | undefined): Promise<Uint8Array>;
    importProfiles(importId: number, tenantId: string, hasBody: boolean, format: ImportFormat, columnTypes: string | null): Promise<ImportResult>;
    stop(): Promise<void>;
    /** Answers at once: the request thread's question whether this thread still runs (./liveness.ts). */
    alive(): Promise<true>;
  };
export type EngineCallName = keyof EngineCalls;

export type ToEngine =
  /** The thread loads its sources at once, and starts the engine when told (after the migrations). */
  | { kind: 'start' }
  | { kind: 'call'; id: number; name: EngineCallName; args: unknown[] }
  | { kind: 'wake'; tenantId: string }
  /** A change notice of the request thread (crowd or profiles changed), so the engine's caches drop their copy. */
  | { kind: 'notice'; name: string; args: unknown[] }
  /** A profile write the request thread committed (server/profiles/index-store.ts), for the engine's profile index. */
  | { kind: 'profiles'; tenantId: string; write: RelayedProfileWrite | null; seq: number }
  /** The next piece of import `id`'s body (its buffer transferred), its end, or the body failing (the client went away). */
  | { kind: 'import-bytes'; id: number; bytes: Uint8Array }
  | { kind: 'import-end'; id: number }
  | { kind: 'import-abort'; id: number; message: string };

export type FromEngine =
  | { kind: 'ready' }
  | { kind: 'failed'; error: SerializedError }
  | { kind: 'counts'; tenantId: string; counts: Counts; coverage: CountsCoverage }
  /** The import's parser took `bytes` more of its body: the request thread may send that much more. */
  | { kind: 'import-read'; id: number; bytes: number }
  /** A notice the engine thread made (a profile write's), for the request thread to send to the other cluster members. */
  | { kind: 'cluster-notice'; name: string; args: unknown[] }
  /** This thread submitted a procedure (a stopAt, an experiment's winner): the request thread's runner runs it now. */
  | { kind: 'procedures-submitted' }
  | { kind: 'reply'; id: number; value: unknown }
  | { kind: 'reply'; id: number; error: SerializedError };

export type SerializedError =
  | { type: 'app'; code: ErrorCode; message: string; details?: unknown }
  | { type: 'retry-later'; message: string; waitMs?: number }
  | { type: 'error'; name: string; message: string; stack?: string; code?: string };

/** Errors cross as data and come back as the same kinds: a 4xx stays a 4xx, a retry-later stays retryable. */
export function serializeError(error: unknown): SerializedError {
  if (error instanceof AppError) return { type: 'app', code: error.code, message: error.message, details: error.details };
  if (error instanceof RetryLaterError) return { type: 'retry-later', message: error.message, waitMs: error.waitMs };
  const plain = error instanceof Error ? error : new Error(String(error));
  // A storage error keeps the code the error table reads: the one that makes it transient (a 503 to send again), else
  // its own (a unique or foreign-key violation: 409, 404).
  const own = (error as { code?: unknown } | null)?.code;
  const code = transientStorageCode(error) ?? (typeof own === 'string' ? own : undefined);
  return { type: 'error', name: plain.name, message: plain.message, stack: plain.stack, ...(code === undefined ? {} : { code }) };
}

export function deserializeError(error: SerializedError): Error {
  if (error.type === 'app') return new AppError(error.code, error.message, error.details);
  if (error.type === 'retry-later') return new RetryLaterError(error.message, { waitMs: error.waitMs });
  const rebuilt = new Error(error.message);
  rebuilt.name = error.name;
  if (error.code !== undefined) Object.assign(rebuilt, { code: error.code });
  if (error.stack) rebuilt.stack = `${error.stack}\n    (in the engine thread)`;
  return rebuilt;
}
