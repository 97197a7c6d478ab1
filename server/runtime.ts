// The composition root: everything one server process holds — storage (Prisma client and raw driver), procedure
// types, the procedure runner and scheduler, the engine, lookup caches, change notices, the recent-log hand-over
// and the shutdown hooks — lives in ONE Runtime object, built by createRuntime() and kept under ONE global key.
//
// Why a global at all: Next.js bundles instrumentation.ts (where boot starts the engine) and every route handler
// apart, each with its own copy of every module, so module variables set by one copy are invisible to the others.
// globalThis is what the copies share; one key for the whole runtime replaces the per-module slots each module used
// to keep. The edges (boot, route handlers) reach a part through its accessor (database(), getEngine(),
// getProcedureRunner()…), which reads this runtime, and hand it on: modules take storage as a Database argument
// (server/storage/database.ts), and parts that need another part
// get it as an argument (the runner its Database, the engine its runner, the instance procedures their engine).
//
// This file imports types only, so any module can import it without an import cycle at evaluation time; each part is
// built on first use by the module that owns it (storage by storage/db.ts, the engine by engine/engine.ts…), and a
// part that is closed (storage after closeDb(), the engine after stopEngine()) is built again on next use.
import type { EngineHandle } from './engine/handle';
import type { EngineThread } from './engine/thread-spawn';
import type { LookupCache } from './lookup-cache';
import type { ProcedureRunner, ProcedureTypeDefinition } from './procedures/types';
import type { Scheduler } from './procedures/scheduler';
import type { Storage } from './storage/db';
import type { RunningLookup } from './workflows/running';
import type { RelayedProfileWrite } from './profiles/index-tenant';
import type { TokenBucket } from './security/rate-limit';
import type { SignInThrottle } from './security/sign-in-throttle';
import type { TenantDedupe } from './engine/ingest-dedupe';
import type { TenantProfiles } from './profiles/index-store';
import type { WebhookPump } from './webhooks/pump';
import type { IdTextFormatter } from './crowd/id-text-formatter';
import type { TableFormatter } from './exports/table-formatter';

/** Rows ingest appended and the partition loop has not taken yet (server/engine/recent-log.ts), per partition. */
export interface RecentRows {
  /** Offset → the row as encoded (server/engine/log-codec.ts) and its event count. */
  rows: Map<number, { bytes: Uint8Array; count: number }>;
  events: number;
}

export interface Runtime {
  /** Prisma client + raw driver of DATABASE_URL (server/storage/db.ts); rebuilt after closeDb(). */
  storage: Storage | undefined;
  readonly procedureTypes: Map<string, ProcedureTypeDefinition>;
  procedureRunner: ProcedureRunner | undefined;
  scheduler: Scheduler | undefined;
  /** Cuts journal moves into webhook deliveries (server/webhooks/pump.ts); started by boot. */
  webhookPump: WebhookPump | undefined;
  /** The engine: the client of the engine thread (server/engine/client.ts) once boot started it, else an in-thread
   * `Engine` (server/engine/engine.ts) created on first use. */
  engine: EngineHandle | undefined;
  /** The engine thread the server entry spawned before loading the rest, until boot's client takes it over. */
  earlyEngineThread: EngineThread | undefined;
  /** The engine's live-count lookup for workflow views (server/workflows/running.ts). */
  runningLookup: RunningLookup | undefined;
  readonly caches: Map<string, LookupCache<unknown>>;
  /** Listeners of in-process change notices by notice name (server/crowd/notice.ts). */
  readonly notices: Map<string, Set<unknown>>;
  /** Hands every notice of this thread to the engine thread as well (set by its client, server/engine/client.ts). */
  noticeRelay: ((name: string, args: unknown[]) => void) | undefined;
  /** Sends every notice of this process to the other members of its cluster (server/cluster/channel.ts). */
  clusterRelay: ((name: string, args: unknown[]) => void) | undefined;
  readonly recentLog: Map<string, RecentRows>;
  /** Per tenant: the Idempotency-Keys and event ids of the dedupe window (server/engine/ingest-dedupe.ts). */
  readonly ingestDedupe: Map<string, TenantDedupe>;
  /** Each tenant's profile index, loaded on first use (server/profiles/index-store.ts). */
  readonly profileIndexes: Map<string, TenantProfiles>;
  /** Hands every committed profile write of this thread to the engine thread's index (set by server/engine/client.ts);
   * `write` null: forget the tenant's index (too many changes to copy across, or the tenant is gone). */
  profileRelay: ((tenantId: string, write: RelayedProfileWrite | null, seq: number) => void) | undefined;
  /** The export formatter thread's client (server/crowd/id-text-formatter.ts), started by the first text export. */
  idTextFormatter: IdTextFormatter | undefined;
  /** The export table thread's client (server/exports/table-formatter.ts), started by the first export with columns. */
  tableFormatter: TableFormatter | undefined;
  /** Whether ingest hands appended rows to partition loops of this thread (off when the engine has its own thread). */
  recentLogEnabled: boolean;
  readonly shutdown: { installed: boolean; readonly closers: Set<() => void> };
  /** Request rate-limit buckets and the last written use, by API key id (server/security/, server/auth.ts); the studio
   * sign-in throttle, built on first use (server/security/sign-in-throttle.ts). */
  readonly security: { readonly buckets: Map<string, TokenBucket>; readonly keyUseWritten: Map<string, number>; signIn: SignInThrottle | undefined };
}

export function createRuntime(): Runtime {
  return {
    storage: undefined,
    procedureTypes: new Map(),
    procedureRunner: undefined,
    scheduler: undefined,
    webhookPump: undefined,
    engine: undefined,
    earlyEngineThread: undefined,
    runningLookup: undefined,
    caches: new Map(),
    notices: new Map(),
    noticeRelay: undefined,
    clusterRelay: undefined,
    recentLog: new Map(),
    ingestDedupe: new Map(),
    profileIndexes: new Map(),
    recentLogEnabled: true,
    profileRelay: undefined,
    idTextFormatter: undefined,
    tableFormatter: undefined,
    shutdown: { installed: false, closers: new Set() },
    security: { buckets: new Map(), keyUseWritten: new Map(), signIn: undefined },
  };
}

const RUNTIME_KEY = Symbol.for('crowdflow.runtime');
const slot = globalThis as unknown as Record<symbol, Runtime | undefined>;

/** This process's runtime (created on first use; every bundle's copy of this module finds the same one). */
export function runtime(): Runtime {
  return (slot[RUNTIME_KEY] ??= createRuntime());
}
