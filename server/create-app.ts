// The composition root of a thread: builds every part once, in order, each handed to the next by constructor or
// argument, and returns them (server/app.ts says what an App holds and how the edges reach the registered one).
//
//   env → clock → storage → Database → state → procedure types + runner → engine → scheduler → webhook pump
//
// Boot (server/boot.ts) builds the request thread's app, the engine thread (server/engine/thread.ts) its own, a test
// or bench one with a ManualClock over the test's storage. Building connects nothing and starts nothing: the client
// connects on its first query, and `start()` starts the loops (boot runs the migrations first).
import type { App, AppState } from './app';
import { clusterTarget } from './cluster';
import { startClusterChannel } from './cluster/channel';
import { systemClock, type Clock } from './clock';
import { IdTextFormatter } from './crowd/id-text-formatter';
import { EngineClient } from './engine/client';
import type { JoinCluster } from './engine/cluster-port';
import { Engine } from './engine/engine';
import type { EngineHandle } from './engine/handle';
import { RecentLog } from './engine/recent-log';
import type { EngineThread } from './engine/thread-spawn';
import { parseEnv, type Env } from './env';
import { TableFormatter } from './exports/table-formatter';
import { ProcedureTypes } from './procedures/registry';
import { closeProfileIndexes, holdProfileIndexes } from './profiles/index-store';
import { createProcedureRunner } from './procedures/runner';
import { createScheduler } from './procedures/scheduler';
import { SignInThrottle } from './security/sign-in-throttle';
import type { ProcedureRunner, ProcedureRunnerOptions } from './procedures/types';
import { databaseOf, type Database } from './storage/database';
import { parseDatabaseUrl, type PostgresTarget } from './storage/database-url';
import { closeStorage, openStorage, type Storage } from './storage/db';
import { WebhookPump } from './webhooks/pump';
import { liveRunningLookup, setRunningLookup } from './workflows/running';

/** How often the webhook pump looks for work nobody woke it for (other members' commits, quiet hours ending). */
const PUMP_IDLE_POLL_MS = 2_000;

/** What an engine is built from: the parts built before it. */
export interface EngineParts {
  env: Env;
  storage: Storage;
  clock: Clock;
  database: Database;
  runner: ProcedureRunner;
  state: App['state'];
}

export interface AppOptions {
  /** The settings every part is handed (server/env.ts); the process's environment by default. */
  env?: Env;
  /** What the app's loops wait on; the system clock by default. */
  clock?: Clock;
  /** Storage to use instead of opening DATABASE_URL's; its owner closes it (close() leaves it open). */
  storage?: Storage;
  /**
   * The engine: `thread` (its client here, the engine in a worker thread), `in-process` (an engine in this thread),
   * `idle` (an engine in this thread that start() does not start: the server with CROWDFLOW_ENGINE=off appends and
   * reads through it), a builder, or `none` (the default: no engine).
   */
  engine?: 'thread' | 'in-process' | 'idle' | 'none' | ((parts: EngineParts) => EngineHandle);
  /** The engine thread the server entry spawned early (engine: 'thread'). */
  engineThread?: EngineThread;
  /** The procedure runner's options (its clock is the app's unless given), or a runner to share (a restarted engine's). */
  runner?: ProcedureRunnerOptions | ProcedureRunner;
  /** Whether the app fires workflow schedules (needs the engine's instance.start type). */
  scheduler?: boolean;
  /** Whether the app cuts journal moves into webhook deliveries. */
  webhooks?: boolean;
}

export function createApp(options: AppOptions = {}): App {
  const env = options.env ?? parseEnv();
  const clock = options.clock ?? systemClock;
  const ownsStorage = !options.storage;
  const storage = options.storage ?? openStorage(parseDatabaseUrl(env.DATABASE_URL), env.CROWDFLOW_PG_POOL_MAX);
  const database = databaseOf(storage);
  const state = createAppState(clock);
  holdProfileIndexes(database, clock);
  const runner = isRunner(options.runner) ? options.runner : createProcedureRunner(database, { clock, types: new ProcedureTypes(), ...options.runner });
  const mode = options.engine ?? 'none';
  const parts: EngineParts = { env, storage, clock, database, runner, state };
  const engine: EngineHandle | undefined =
    typeof mode === 'function'
      ? mode(parts)
      : mode === 'thread'
        ? new EngineClient(database, runner, state, env, clusterJoin(clusterTarget(env, storage.target), database), options.engineThread)
        : mode === 'in-process' || mode === 'idle'
          ? new Engine({ database, runner, clock, ingestState: state })
          : undefined;
  const startsEngine = mode !== 'idle' && mode !== 'none';
  // Until the engine has loaded an instance it knows no live count, and the lookup answers what the Instance table has.
  if (startsEngine && engine)
    setRunningLookup(
      database,
      liveRunningLookup((instanceId) => engine.liveUserCount(instanceId)),
    );
  const scheduler = options.scheduler ? createScheduler({ database, runner, clock }) : undefined;
  // Woken by the engine's commits, the pump polls only for other processes' and for held deliveries coming due.
  const webhookPump = options.webhooks
    ? new WebhookPump({
        database,
        runner,
        clock,
        zones: engine?.profiles,
        idlePollMs: engine ? PUMP_IDLE_POLL_MS : undefined,
        privateAddressesForEveryTenant: env.CROWDFLOW_WEBHOOK_ALLOW_PRIVATE,
      })
    : undefined;
  if (webhookPump && engine) engine.onCountsChanged(() => webhookPump.wake());
  let started = false;

  const stop = async () => {
    if (!started) return;
    started = false;
    await webhookPump?.stop();
    await scheduler?.stop();
    await runner.stop();
    if (startsEngine) await engine?.stop();
  };
  return {
    env,
    clock,
    storage,
    database,
    state,
    runner,
    procedureTypes: runner.types,
    engine,
    scheduler,
    webhookPump,
    async start(phase = () => undefined) {
      started = true;
      if (startsEngine && engine) {
        await engine.start();
        phase('engine');
      }
      await runner.start();
      scheduler?.start();
      webhookPump?.start();
      phase('procedures');
    },
    stop,
    async close() {
      await stop();
      await Promise.all([state.formatters.idText.close(), state.formatters.table.close()]);
      await closeProfileIndexes(database);
      if (ownsStorage) await closeStorage(storage);
    },
  };
}

/** What the thread keeps between calls, empty but for the parts that wait unused until asked (they start nothing). */
function createAppState(clock: Clock): AppState {
  return {
    recentLog: new RecentLog(),
    ingestDedupe: new Map(),
    ingestQueues: new Map(),
    tenantPartitions: new Map(),
    formatters: { idText: new IdTextFormatter(), table: new TableFormatter() },
    shutdown: { installed: false, closers: new Set() },
    security: { buckets: new Map(), keyUseWritten: new Map(), signIn: new SignInThrottle(undefined, clock) },
  };
}

function isRunner(given: AppOptions['runner']): given is ProcedureRunner {
  return given !== undefined && 'submit' in given;
}

/**
 * How the engine client joins the process's cluster from the request thread, which holds the membership so its
 * heartbeat goes on while the engine thread is busy; undefined when the process is no member.
 */
function clusterJoin(target: PostgresTarget | undefined, database: Database): JoinCluster | undefined {
  return target && ((onCounts, engineResponsive) => startClusterChannel(database, target, onCounts, engineResponsive));
}
