// The one hand-over of a thread's composition root. `createApp()` (server/create-app.ts) builds every part of a
// thread once, in order, each handed to the next by constructor or argument: storage, its Database, the procedure
// runner (with its procedure types), the engine (or the engine thread's client), the scheduler and the webhook pump,
// and the state the thread keeps (per-tenant ingest state, export formatters, security memory; what it keeps beside its
// rows, the change notices, lookup caches and profile indexes, is its Database's local state). The
// edge that built it — boot (server/boot.ts) on the request thread, server/engine/thread.ts on the engine thread, a
// test or bench — registers it here once.
//
// Why a global at all: Next.js bundles every route handler apart, each with its own copy of every module, so module
// variables set by one copy are invisible to the others; globalThis is what the copies share. ONE key holds the
// registered App and `app()` throws when none is: nothing is built on first use.
//
// This file imports types only, so any module can import it without an import cycle at evaluation time.
import type { Clock } from './clock';
import type { EngineHandle } from './engine/handle';
import type { IngestState } from './engine/ingest-state';
import type { Env } from './env';
import type { KeyUseMemory } from './auth';
import type { ExportFormatters } from './exports/table-export';
import type { Scheduler } from './procedures/scheduler';
import type { ProcedureTypes } from './procedures/registry';
import type { ProcedureRunner } from './procedures/types';
import type { SignInThrottle } from './security/sign-in-throttle';
import type { Database } from './storage/database';
import type { Storage } from './storage/db';
import type { WebhookPump } from './webhooks/pump';

/** What a thread keeps between calls: owned by its App, built with it (createAppState), gone with it. Its ingest state
 * (server/engine/ingest-state.ts) is handed to ingest and the engine. */
export interface AppState extends IngestState {
  /** The export formatter threads' clients (server/crowd/id-text-formatter.ts, server/exports/table-formatter.ts):
   * their threads start with the first export that needs them. */
  readonly formatters: ExportFormatters;
  /** Long-lived responses' closers and whether the signal handlers are installed (server/shutdown.ts). */
  readonly shutdown: { installed: boolean; readonly closers: Set<() => void> };
  /** Request rate-limit buckets and the last written use, by API key id (server/auth.ts KeyUseMemory); the studio
   * sign-in throttle (server/security/sign-in-throttle.ts). */
  readonly security: KeyUseMemory & { readonly signIn: SignInThrottle };
}

/** One thread's parts, built once by createApp() in this order. */
export interface App {
  readonly env: Env;
  /** The clock the app's loops wait on (the system clock, or a test's ManualClock). */
  readonly clock: Clock;
  /** Prisma client + raw driver of the app's database (server/storage/db.ts). */
  readonly storage: Storage;
  /** What modules are handed: the storage's client, raw driver and dialect, and the app's local state beside its rows
   * (server/storage/database.ts). */
  readonly database: Database;
  readonly state: AppState;
  /** The procedure runner; its procedure types are `runner.types`. */
  readonly runner: ProcedureRunner;
  readonly procedureTypes: ProcedureTypes;
  /** The engine: the engine thread's client, an engine in this thread, or none (a thread that only reads rows). */
  readonly engine: EngineHandle | undefined;
  readonly scheduler: Scheduler | undefined;
  readonly webhookPump: WebhookPump | undefined;
  /** Starts the background parts in order: the engine, the runner, the scheduler, the webhook pump; `phase` is told
   * when the engine runs ('engine') and when the rest does ('procedures'). */
  start(phase?: (name: 'engine' | 'procedures') => void): Promise<void>;
  /** Stops them in reverse order (the engine hands its partitions back after a last checkpoint). */
  stop(): Promise<void>;
  /** stop(), then writes the profile indexes' owed snapshots, then closes the storage unless it was handed in (then its
   * owner closes it). */
  close(): Promise<void>;
}

const APP_KEY = Symbol.for('crowdflow.app');
const slot = globalThis as unknown as Record<symbol, App | undefined>;

/** Makes `built` the thread's app (every bundle's copy of this module finds it); returns the one it replaces. */
export function registerApp(built: App | undefined): App | undefined {
  const previous = slot[APP_KEY];
  slot[APP_KEY] = built;
  return previous;
}

/** The thread's registered app; throws when nothing registered one (nothing is built on first use). */
export function app(): App {
  const registered = slot[APP_KEY];
  if (!registered)
    throw new Error(
      'No app is registered in this thread: its entry (server/boot.ts, server/engine/thread.ts, a test setup) builds one with createApp() and registers it',
    );
  return registered;
}
