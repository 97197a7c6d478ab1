// `npm run bench [-- --quick] [--only=crowd,rows,http,engine,load,profiles,timeouts,ingest,entry,procedures,webhooks,cluster,tenants,exports,isolation,caps,restart]
//   [--providers=sqlite,postgres] [--steps=counts,sse,…] [--tenants=1,100,300,1000] [--tenants-window=60] [--phases=start,import,…] [--profile] [--out=file.json]`
// Measures what users feel, side by side with the per-user-rows baseline and the bare-bitmap limit,
// prints a table and writes bench/results.json. Benchmarks report; they never fail.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { denseBitmap, idsAsText, journeyEvents, sparseIds } from './lib/data';
import { createScratchDatabase, TMP_DIR, type Provider } from './lib/database';
import { formatTable, score, type ScenarioResult } from './lib/report';
import { measureCrowd, type CrowdFigures } from './scenarios/crowd';
import { measureEngine, type EngineFigures } from './scenarios/engine';
import { measureJourney, PARTITIONS, type JourneyFigures } from './scenarios/journey';
import { measureLimits, type LimitFigures } from './scenarios/limits';
import { measureLoadLatency, type LoadFigures } from './scenarios/load-latency';
import { measureProfiles, type ProfileFigures } from './scenarios/profiles';
import { measureIngest, type IngestFigures } from './scenarios/ingest';
import { measureEntry, type EntryFigures } from './scenarios/entry';
import { measureProcedures, type ProcedureFigures } from './scenarios/procedures';
import { measureCluster, type ClusterFigures } from './scenarios/cluster';
import { closeApp, measureRows, useDatabase, type RowsFigures } from './scenarios/rows';
import { measureWebhooks, type WebhookFigures } from './scenarios/webhooks';
import { measureTimeouts, type TimeoutFigures } from './scenarios/timeouts';
import { measureTenants, type TenantFigures } from './scenarios/tenants';
import { measurePaths, type PathsFigures } from './scenarios/paths';
import { ISOLATION_PHASES, type IsolationFigures, type IsolationPhase, measureIsolation } from './scenarios/isolation';
import { isolationSummary } from './scenarios/isolation-table';
import { measureRestartBig, type RestartFigures } from './scenarios/restart-big';
import { measureExports, type ExportFigures } from './scenarios/exports';
import { measureCaps, type CapFigures } from './scenarios/caps';
import { buildResults } from './scenarios/table';
import { summarizeWindows, WINDOWS_FILE } from './profile-summary';
import { windows } from './lib/windows';
import { installInterruptHandler, undoOnInterrupt } from './lib/cleanup';

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const profile = args.includes('--profile');
const listArg = (name: string, all: string[]) =>
  args
    .find((a) => a.startsWith(`--${name}=`))
    ?.split('=')[1]
    .split(',') ?? all;
const sections = new Set(
  listArg('only', [
    'crowd',
    'rows',
    'http',
    'engine',
    'load',
    'profiles',
    'timeouts',
    'ingest',
    'entry',
    'procedures',
    'webhooks',
    'cluster',
    'tenants',
    'exports',
    'isolation',
    'caps',
    'restart',
  ]),
);
// Paths and funnels (issue 38 §4) and asOf (§2) run in every full bench; `--only=paths` runs them alone.
if (!args.some((a) => a.startsWith('--only='))) sections.add('paths');
const providers = listArg('providers', ['sqlite', 'postgres']) as Provider[];
const output = args.find((a) => a.startsWith('--out='))?.split('=')[1] ?? 'bench/results.json';
/** Journey steps over HTTP to run (text upload, counts, export csv, export roaring, sse, events, timer, recovery). */
const steps = args
  .find((a) => a.startsWith('--steps='))
  ?.split('=')[1]
  .split(',');

/** The isolation section's phases to run (the idle phase always runs). */
const isolationPhases = new Set(listArg('phases', [...ISOLATION_PHASES]) as IsolationPhase[]);

/** Tenant counts of the tenants section (each level adds tenants to the last), and its idle CPU window in seconds. */
const tenantLevels = listArg('tenants', quick ? ['1', '100'] : ['1', '100', '300', '1000']).map(Number);
const tenantsWindowMs = 1000 * Number(listArg('tenants-window', [quick ? '15' : '60'])[0]);

const scale = quick ? 0.1 : 1;
export const SCALE = {
  scale,
  users: 10_000_000 * scale,
  rowUsers: 1_000_000 * scale,
  events: 1_000_000 * scale,
  rowEvents: 20_000 * scale,
  recoveryMoves: 1_000_000 * scale,
  countReads: quick ? 200 : 1_000,
  sseSamples: quick ? 20 : 100,
  repeats: quick ? 3 : 5,
  partitions: PARTITIONS,
};

/** The isolation section (issue 34): a 2^27-user start and 10M-user export at full scale, phases of 15 s. */
const ISOLATION_SIZES = {
  startUsersLog2: quick ? 24 : 27,
  exportUsers: SCALE.users,
  profiles: 2_000_000 * scale,
  importLines: 500_000 * scale,
  phaseMs: quick ? 6_000 : 15_000,
};

/** The restart section (issue 33 §3): two instances over 2^27 users and three 2M-user timer instances. */
const RESTART_SIZES = { bigLog2: quick ? 24 : 27, timerUsers: 2_000_000 * scale };

async function main(): Promise<void> {
  const startedAt = new Date();
  installInterruptHandler();
  const loadBefore = loadavg();
  mkdirSync(TMP_DIR, { recursive: true });
  if (profile) rmSync(join(TMP_DIR, 'profiles'), { recursive: true, force: true });
  console.log(
    `Crowdflow benchmarks${quick ? ' (--quick: 1/10 scale)' : ''}: ${SCALE.users.toLocaleString('en-US')} users, ${PARTITIONS} ` +
      `partitions, per-user rows at ${SCALE.rowUsers.toLocaleString('en-US')} users`,
  );
  console.log(
    `machine: ${cpus().length} × ${cpus()[0]?.model}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, node ${process.version}, load ${loadBefore.map((l) => l.toFixed(2)).join(' ')}`,
  );

  console.log('preparing inputs…');
  const sparse = sparseIds(SCALE.users);
  const crowdText = idsAsText(sparse);
  const dense = denseBitmap(SCALE.users);

  let crowd: CrowdFigures | undefined;
  if (sections.has('crowd')) {
    console.log('crowd library (parse, export) and the bare limits…');
    // Exports format ids in the app's formatter thread, so the section runs inside an app (on a scratch SQLite file
    // it never writes to).
    crowd = await withDatabase('sqlite', 'crowd', async (database) => {
      await useDatabase(database.url);
      try {
        return await measureCrowd(crowdText, sparse.length, SCALE.repeats);
      } finally {
        await closeApp();
      }
    });
  }
  console.log('bare limits…');
  const limits: LimitFigures = measureLimits(dense, SCALE);

  const rows: Partial<Record<Provider, RowsFigures>> = {};
  const http: Partial<Record<Provider, JourneyFigures>> = {};
  const engine: Partial<Record<Provider, EngineFigures>> = {};
  const load: Partial<Record<Provider, LoadFigures>> = {};
  const profiles: Partial<Record<Provider, ProfileFigures>> = {};
  const ingest: Partial<Record<Provider, IngestFigures>> = {};
  const entry: Partial<Record<Provider, EntryFigures>> = {};
  const procedures: Partial<Record<Provider, ProcedureFigures>> = {};
  const webhooks: Partial<Record<Provider, WebhookFigures>> = {};
  const timeouts: Partial<Record<Provider, TimeoutFigures>> = {};
  const tenants: Partial<Record<Provider, TenantFigures>> = {};
  const pathFigures: Partial<Record<Provider, PathsFigures>> = {};
  const isolation: Partial<Record<Provider, IsolationFigures>> = {};
  const restart: Partial<Record<Provider, RestartFigures>> = {};
  const exports: Partial<Record<Provider, ExportFigures>> = {};
  let cluster: ClusterFigures | undefined;
  let caps: CapFigures | undefined;
  if (sections.has('caps')) {
    console.log('frequency caps: the decision for a bulk move (in process)…');
    caps = measureCaps(sparse, SCALE.repeats);
  }
  const save = (complete: boolean) => {
    const results = buildResults({
      scale: SCALE,
      crowd,
      limits,
      rows,
      http,
      engine,
      load,
      profiles,
      timeouts,
      ingest,
      entry,
      procedures,
      webhooks,
      cluster,
      tenants,
      paths: pathFigures,
      exports,
      isolation,
      caps,
      restart,
    }).map((r: ScenarioResult) => score(r, scale));
    const report = {
      startedAt: startedAt.toISOString(),
      finishedAt: new Date().toISOString(),
      complete,
      quick,
      scale: SCALE,
      machine: {
        cpus: cpus().length,
        model: cpus()[0]?.model,
        memoryGiB: Math.round(totalmem() / 2 ** 30),
        node: process.version,
        loadBefore,
        loadAfter: loadavg(),
      },
      results,
    };
    // Written after every section too, so an interrupted run still leaves what it measured.
    writeFileSync(resolve(output), `${JSON.stringify(report, null, 2)}\n`);
    return results;
  };
  // Per provider, the sections that import 10M profiles (profiles, timeouts; 7+ min each on PostgreSQL) and the
  // per-user-rows baseline (Prisma inserts a million rows) go last, so a run cut short still has every quick section.
  for (const provider of providers) {
    if (sections.has('http')) {
      console.log(`journey over HTTP on ${provider}…`);
      http[provider] = await withDatabase(provider, 'http', (database) =>
        measureJourney(database, {
          users: SCALE.users,
          crowdText,
          events: SCALE.events,
          countReads: SCALE.countReads,
          sseSamples: SCALE.sseSamples,
          recoveryMoves: SCALE.recoveryMoves,
          profile,
          steps,
        }),
      );
      save(false);
    }
    if (sections.has('load')) {
      console.log(`API latency under engine load on ${provider}…`);
      load[provider] = await withDatabase(provider, 'load', (database) => measureLoadLatency(database, { users: SCALE.users, events: SCALE.events, profile }));
      save(false);
    }
    if (sections.has('isolation')) {
      console.log(`isolation: tenant B's counts and events beside a control process while tenant A works, over HTTP on ${provider}…`);
      isolation[provider] = await withDatabase(provider, 'isolation', (database) => measureIsolation(database, ISOLATION_SIZES, profile, isolationPhases));
      const figures = isolation[provider];
      if (figures) console.log(isolationSummary(figures, provider));
      save(false);
    }
    if (sections.has('restart')) {
      console.log(`restart with big state on ${provider}…`);
      restart[provider] = await withDatabase(provider, 'restart', (database) => measureRestartBig(database, RESTART_SIZES, profile));
      save(false);
    }
    if (sections.has('ingest')) {
      console.log(`idempotent ingest (keys and event ids) against plain ingest on ${provider}…`);
      // A tenth of the journey's crowd: four runs each hold an instance, and the rate, not the crowd, is measured.
      ingest[provider] = await withDatabase(provider, 'ingest', (database) =>
        measureIngest(database, { users: SCALE.users / 10, events: SCALE.events / 2, profile }),
      );
      save(false);
    }
    if (sections.has('entry')) {
      console.log(`event-triggered entry over HTTP on ${provider}…`);
      entry[provider] = await withDatabase(provider, 'entry', (database) => measureEntry(database, { users: SCALE.events, profile }));
      save(false);
    }
    if (sections.has('engine')) {
      console.log(`engine only (no HTTP) on ${provider}…`);
      engine[provider] = await withDatabase(provider, 'engine', (database) => measureEngine(database, SCALE, profile));
      save(false);
    }
    if (sections.has('procedures')) {
      console.log(`procedure runner on ${provider}…`);
      procedures[provider] = await withDatabase(provider, 'procedures', (database) => measureProcedures(database, quick ? 300 : 1_000));
      save(false);
    }
    if (sections.has('webhooks')) {
      console.log(`webhook delivery of a bulk move on ${provider}…`);
      webhooks[provider] = await withDatabase(provider, 'webhooks', (database) => measureWebhooks(database, SCALE.users));
      save(false);
    }
    if (sections.has('cluster') && provider === 'postgres') {
      console.log('a cluster of 1, 2 and 3 members on PostgreSQL (events, CPU per member, counts on a non-owner, takeovers)…');
      // A tenth of the journey's events per cluster size keeps the section near two minutes on a quiet machine.
      cluster = await withDatabase(provider, 'cluster', (database) =>
        measureCluster(database, { users: SCALE.users / 10, events: SCALE.events / 10, profile }),
      );
      save(false);
    }
    if (sections.has('exports')) {
      console.log(`exports with 3 profile columns (CSV, Parquet) and step → crowd over HTTP on ${provider}…`);
      exports[provider] = await withDatabase(provider, 'exports', (database) => measureExports(database, SCALE.users, profile));
      save(false);
    }
    if (sections.has('profiles')) {
      console.log(`profiles (import, timer, audience, index boot) on ${provider}…`);
      profiles[provider] = await withDatabase(provider, 'profiles', (database) => measureProfiles(database, SCALE.users));
      save(false);
    }
    if (sections.has('paths')) {
      console.log(`paths, funnel and asOf over a day of ${SCALE.rowUsers.toLocaleString('en-US')} users' moves (engine in process) on ${provider}…`);
      pathFigures[provider] = await withDatabase(provider, 'paths', (database) => measurePaths(database, SCALE.rowUsers, SCALE.repeats, profile));
      save(false);
    }
    if (sections.has('timeouts')) {
      console.log(`branch step timeouts and local-time timers (engine only) on ${provider}…`);
      timeouts[provider] = await withDatabase(provider, 'timeouts', (database) => measureTimeouts(database, SCALE.users));
      save(false);
    }
    if (sections.has('rows')) {
      console.log(`per-user rows baseline on ${provider} (${SCALE.rowUsers.toLocaleString('en-US')} users)…`);
      rows[provider] = await withDatabase(provider, 'rows', (database) =>
        measureRows(database, SCALE.rowUsers, journeyEvents(SCALE.rowEvents, SCALE.rowUsers, 11), quick ? 10 : 20),
      );
      save(false);
    }
    if (sections.has('tenants')) {
      console.log(`tenants: ${tenantLevels.join(', ')} idle tenants with a timer each minute, over HTTP on ${provider}…`);
      tenants[provider] = await withDatabase(provider, 'tenants', (database) =>
        measureTenants(database, { levels: tenantLevels, windowMs: tenantsWindowMs, profile }),
      );
      save(false);
    }
  }

  const results = save(true);
  console.log('');
  console.log(formatTable(results));
  const finishedAt = new Date();
  if (profile) {
    mkdirSync(join(TMP_DIR, 'profiles'), { recursive: true }); // a section that runs no server writes no profile
    writeFileSync(join(TMP_DIR, 'profiles', WINDOWS_FILE), JSON.stringify(windows));
    console.log(`\nwhere the time went (self time per function inside each scenario's window):${summarizeWindows(join(TMP_DIR, 'profiles'), windows)}`);
  }
  console.log(`\nwrote ${output} (${((finishedAt.getTime() - startedAt.getTime()) / 1000).toFixed(0)} s)`);
}

async function withDatabase<T>(
  provider: Provider,
  label: string,
  work: (database: Awaited<ReturnType<typeof createScratchDatabase>>) => Promise<T>,
): Promise<T | undefined> {
  let database: Awaited<ReturnType<typeof createScratchDatabase>> | undefined;
  let forget = () => {};
  try {
    database = await createScratchDatabase(provider, label);
    forget = undoOnInterrupt(database.drop);
    return await work(database);
  } catch (error) {
    console.log(`  ! ${label} on ${provider} failed: ${(error as Error).stack ?? error}`);
    return undefined;
  } finally {
    forget();
    await database?.drop().catch(() => undefined);
  }
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(0); // benchmarks report; they never fail the build
  },
);
