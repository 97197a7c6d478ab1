import { defineConfig } from 'vitest/config';
import SpreadSequencer from './test/setup/spread-sequencer';

// Unit tests of code that reads no storage and no app (conditions, crons, parsing, codecs, the studio's helpers) run
// once, in the `logic` project, without a database. A file that needs one fails there loudly ("No app is registered").
const logic = (
  'canvas-convert chart-scale cluster-assignment condition-depth condition-gate conditions-cost conditions-plan ' +
  'browser-shared-imports conditions-profile-index conditions-regex conditions cron-memo docs-links duration-cron-bounds engine-liveness ' +
  'experiment-stats fair-turns holdout-lift layers quiet-hours-window ' +
  'error-response json-response local-time-zones log-codec loop-clock module-state mover-ownership names partition-split plan-memory portable-contains ' +
  'problem-words profile-import-stream profile-index-model route-context rule-builder shard-rows step-export-name studio-editing ' +
  'table-format timer-period wakeup workflow-validation'
)
  .split(' ')
  .map((name) => `test/unit/${name}.test.ts`);

// Every other test file runs twice: once on a fresh SQLite file, once on a fresh PostgreSQL schema
// (test/setup/database.ts). API tests talk to a real Next.js server per provider (test/setup/server.ts).
const provider = (name: 'sqlite' | 'postgres') => ({
  extends: true as const,
  test: {
    name,
    include: ['test/unit/**/*.test.ts', 'test/api/**/*.test.ts'],
    exclude: logic,
    env: { CROWDFLOW_TEST_PROVIDER: name },
    setupFiles: ['test/setup/database.ts'],
    // openapi-statuses after server: its check runs when the run is over (teardowns run in reverse order).
    globalSetup: ['test/setup/openapi-statuses.ts', 'test/setup/server.ts', 'test/setup/template-database.ts'],
  },
});

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 180_000,
    pool: 'forks',
    // A worker runs one project's files one after another in the same process (test/setup/spread-sequencer.ts keeps
    // them in a row): importing the app once per worker instead of once per file took the setup of 329 files from
    // ~460 s to ~40 s. Every file still builds its own database and app (test/setup/database.ts) and closes them, and
    // no module of server/ keeps state of its own (module-state.test.ts), so nothing a file did reaches the next.
    isolate: false,
    // Two files at a time, whatever the machine. Vitest's default on 2 cores is one (cores - 1), which left a core idle
    // while a file waited on its server, PostgreSQL or a child process: the run used ~1 core on average. Every project
    // shares the two (cluster and e2e files too, spread among the others by the sequencer), so no project waits for
    // another to finish.
    maxWorkers: 2,
    sequence: { sequencer: SpreadSequencer },
    projects: [
      { extends: true, test: { name: 'logic', include: logic } },
      provider('sqlite'),
      provider('postgres'),
      {
        // Three real server processes on one PostgreSQL schema (each test makes its own schema and servers).
        extends: true,
        test: { name: 'cluster', include: ['test/cluster/**/*.test.ts'], env: { CROWDFLOW_TEST_PROVIDER: 'postgres' } },
      },
      {
        extends: true,
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          env: { CROWDFLOW_TEST_PROVIDER: 'sqlite' },
          globalSetup: ['test/setup/server.ts'],
        },
      },
    ],
  },
});
