// Restart with big state (issue 33 §3, section `restart`): one tenant holds two instances over 2^27 users and three
// 2M-user instances waiting in a timer step, another tenant a 3-user instance. The server is stopped (SIGTERM) and a
// new one started on the same database: spawn → listening, → the small tenant's first answered count, → the big
// instances' whole counts. Target: the first answer ≤ 2 s after spawn, whatever the state's size.
import type { ScratchDatabase } from '../lib/database';
import { BRANCH_JOURNEY, denseBitmap, timerJourney } from '../lib/data';
import type { ScenarioResult } from '../lib/report';
import { call, listenedAfterMs, startInstance, startServer, workflow, type BenchServer } from '../lib/server';
import { counts } from './tenants-setup';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface RestartSizes {
  /** log2 of each big instance's users. */
  bigLog2: number;
  timerUsers: number;
}

export interface RestartFigures {
  sizes: RestartSizes;
  setupMs: number;
  stopMs: number;
  listenMs: number;
  firstCountMs: number;
  /** Spawn → every instance of the big tenant answering its whole count. */
  bigCountsMs: number;
  rssBytes: number;
}

const BIG = 'restart-big';
const SMALL = 'restart-small';

async function countedWhole(server: Pick<BenchServer, 'baseUrl'>, tenant: string, instanceId: string, users: number): Promise<boolean> {
  return (await counts(server, tenant, instanceId))?.total === users;
}

async function setUp(server: BenchServer, sizes: RestartSizes) {
  const bigUsers = 2 ** sizes.bigLog2;
  for (const tenant of [BIG, SMALL]) await call(server, 'POST', '/tenants', { name: tenant, partitions: 8 });
  const room = Math.max(bigUsers, sizes.timerUsers);
  await call(server, 'PUT', `/tenants/${BIG}/limits`, { maxCrowdUsers: room, maxInstanceUsers: room });
  await call(server, 'PUT', `/tenants/${SMALL}/crowds/few`, '1\n2\n3\n', 'text/plain');
  const small = await startInstance(server, SMALL, await workflow(server, SMALL, 'probe', BRANCH_JOURNEY), 'few');
  const instances: { id: string; users: number }[] = [];
  await call(server, 'PUT', `/tenants/${BIG}/crowds/huge`, Buffer.from(denseBitmap(bigUsers).serialize('portable')), 'application/octet-stream');
  for (const name of ['huge-1', 'huge-2']) {
    instances.push({ id: await startInstance(server, BIG, await workflow(server, BIG, name, BRANCH_JOURNEY), 'huge'), users: bigUsers });
  }
  await call(server, 'PUT', `/tenants/${BIG}/crowds/timed`, Buffer.from(denseBitmap(sizes.timerUsers).serialize('portable')), 'application/octet-stream');
  const nextYear = new Date(Date.UTC(new Date().getUTCFullYear() + 1, 0, 1, 9, 0, 0));
  for (const name of ['timed-1', 'timed-2', 'timed-3']) {
    instances.push({ id: await startInstance(server, BIG, await workflow(server, BIG, name, timerJourney(nextYear)), 'timed'), users: sizes.timerUsers });
  }
  return { small, instances };
}

export async function measureRestartBig(database: ScratchDatabase, sizes: RestartSizes, profile?: boolean): Promise<RestartFigures> {
  let server = await startServer(database.url, { profile });
  try {
    const setupStarted = performance.now();
    const { small, instances } = await setUp(server, sizes);
    const setupMs = performance.now() - setupStarted;
    const stopping = performance.now();
    await server.stop();
    const stopMs = performance.now() - stopping;
    const spawned = performance.now();
    // Up once the small instance's counts answer: the route is the server's own, served before Next is ready.
    server = await startServer(database.url, { profile, answering: (at) => countedWhole(at, SMALL, small, 3) });
    const firstCountMs = performance.now() - spawned;
    const listenMs = listenedAfterMs(server) ?? firstCountMs;
    for (const instance of instances) {
      while (!(await countedWhole(server, BIG, instance.id, instance.users))) {
        if (performance.now() - spawned > 600_000) throw new Error(`restart: instance ${instance.id} not counted whole within 600 s`);
        await sleep(20);
      }
    }
    const bigCountsMs = performance.now() - spawned;
    // The server's own account of its boot phases (migrations, Next; then the engine's start), to say where a slow boot went.
    const lines = server.log().split('\n');
    for (const line of lines.filter((text) => text.includes('listening on') || text.includes('pages ready') || text.includes('engine and procedures running')))
      console.log(`  ${line.trim()}`);
    const figures = { sizes, setupMs, stopMs, listenMs, firstCountMs, bigCountsMs, rssBytes: server.rssBytes() };
    console.log(
      `  restart with 2 × 2^${sizes.bigLog2} + 3 × ${sizes.timerUsers.toLocaleString('en-US')} users (setup ${(setupMs / 1000).toFixed(1)} s): ` +
        `stop ${stopMs.toFixed(0)} ms; listening ${listenMs.toFixed(0)} ms, first count ${firstCountMs.toFixed(0)} ms, ` +
        `every big instance whole ${bigCountsMs.toFixed(0)} ms after spawn; RSS ${(figures.rssBytes / 2 ** 20).toFixed(0)} MiB`,
    );
    return figures;
  } finally {
    await server.stop();
  }
}

export function restartRows(figures: RestartFigures, provider: 'sqlite' | 'postgres'): ScenarioResult[] {
  const state = `2 × 2^${figures.sizes.bigLog2} + 3 × ${figures.sizes.timerUsers.toLocaleString('en-US')} users`;
  const where = `http-${provider}` as const;
  return [
    {
      scenario: `restart with big state (${state}): spawn → first answered count`,
      provider: where,
      ours: { value: figures.firstCountMs, unit: 'ms', note: `(listening ${figures.listenMs.toFixed(0)} ms; SIGTERM stop ${figures.stopMs.toFixed(0)} ms)` },
      target: { value: 2_000, direction: 'lower', text: '≤ 2 s' },
    },
    {
      scenario: `restart with big state (${state}): spawn → every big instance counted whole`,
      provider: where,
      ours: { value: figures.bigCountsMs, unit: 'ms', note: `(RSS ${(figures.rssBytes / 2 ** 20).toFixed(0)} MiB)` },
    },
  ];
}
