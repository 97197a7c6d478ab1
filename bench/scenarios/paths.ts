// Paths and funnels over a day of moves (issue 38 §4), engine in this process on a scratch database, on a ManualClock:
// N users start a journey (one bulk move into the entry step and one down its direct chain), then a day passes hour by
// hour: each hour a twentieth of the users send an event (open or buy: single moves), branch timeouts and timers move
// whoever waits (bulk moves). The figures are GET …/paths and …/funnel over that day as the route computes them
// (server/analytics/instance-analytics.ts, read from the journal), best of a few runs; and the counts and a step's users
// as of an hour before the end (issue 38 §2, `?asOf=`: checkpoints are newer than that, so each is turned back by the
// hour's moves), checked against the counts the engine had then.
import { ManualClock } from '../../server/clock';
import { saveCrowd } from '../../server/crowd';
import { instanceFunnel, instancePaths } from '../../server/analytics/instance-analytics';
import { countsAsOf, stepUsersAsOf } from '../../server/engine/as-of';
import { app } from '../../server/app';
import { Engine } from '../../server/engine/engine';
import { appendEvents } from '../../server/engine/ingest';
import { WorkflowDefinition } from '../../core/model/workflow';
import { createProcedureRunner } from '../../server/procedures/runner';
import { database as processDatabase } from '../../test/helpers/app-db';
import { createTenant, type Tenant } from '../../server/tenants/tenants';
import { createWorkflow } from '../../server/workflows/workflows';
import { denseBitmap } from '../lib/data';
import type { ScratchDatabase } from '../lib/database';
import { profiled } from '../lib/windows';
import type { Measured } from './journey';
import { useDatabase } from './rows';

export interface PathsFigures {
  paths: Measured;
  funnel: Measured;
  asOf: Measured;
}

const HOUR = 3_600_000;
const EVENT_SHARE_PER_HOUR = 1 / 20;
const EVENTS_PER_APPEND = 10_000;

const definition = {
  steps: [
    { name: 'welcome', kind: 'direct', next: 'wait' },
    {
      name: 'wait',
      kind: 'branch',
      branches: [
        { condition: 'event.type == "open"', next: 'engaged' },
        { condition: 'event.type == "buy"', next: 'bought' },
      ],
      timeout: { after: '2h', next: 'reminded' },
    },
    { name: 'engaged', kind: 'timer', cron: '0 0 */3 * * *', next: 'offer' },
    { name: 'reminded', kind: 'timer', cron: '0 30 */3 * * *', next: 'offer' },
    {
      name: 'offer',
      kind: 'branch',
      branches: [
        { condition: 'event.type == "buy"', next: 'bought' },
        { condition: 'event.type == "open"', next: 'wait' },
      ],
      timeout: { after: '6h', next: 'done' },
    },
    { name: 'bought', kind: 'direct' },
    { name: 'done', kind: 'direct' },
  ],
};

/** A journey run over a day, as the measured reads find it once the engine has stopped. */
export interface DayOfMoves {
  tenant: Tenant;
  instanceId: string;
  start: number;
  end: number;
  moves: number;
  /** The moment an hour back that asOf is asked about, and the engine's counts then. */
  hourBack: { at: number; steps: Record<string, number> };
}

/** Runs the day of moves of `users` users on the registered app's database (see the top of this file). */
export async function dayOfMoves(users: number): Promise<DayOfMoves> {
  const start = Date.UTC(2026, 0, 5, 0, 0, 30);
  const clock = new ManualClock(start);
  const registered = app();
  const runner = createProcedureRunner(registered.database, { pollMs: 50 });
  const engine = new Engine({ database: registered.database, ingestState: registered.state, clock, runner, owner: 'bench-paths' });
  await runner.start();
  await engine.start();
  await engine.loaded();
  try {
    const view = await createTenant(processDatabase(), { name: 'paths', partitions: 8 });
    const tenant = { ...view, createdAt: new Date(view.createdAt) };
    await saveCrowd(processDatabase(), tenant.id, 'all', denseBitmap(users), 'replace');
    const workflow = await createWorkflow(processDatabase(), tenant, { name: 'day', definition: WorkflowDefinition.parse(definition) });
    const { procedureId, instanceId } = await engine.startInstance(tenant.id, workflow.id, { crowd: 'all' });
    await runner.await(procedureId, 600_000);

    console.log(`  a day of moves of ${users.toLocaleString('en-US')} users (events each hour, timeouts and timers)…`);
    let seed = 7;
    const random = () => {
      seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0;
      return seed / 2 ** 32;
    };
    const perHour = Math.round(users * EVENT_SHARE_PER_HOUR);
    let hourBack: { at: number; steps: Record<string, number> } | undefined;
    for (let hour = 0; hour < 24; hour++) {
      if (hour === 23) {
        // The moment asked for below: after the timers of 23:00, a second before that hour's events.
        hourBack = { at: clock.now(), steps: (await engine.getCounts(tenant.id, instanceId)).steps };
        await clock.advance(1000);
      }
      for (let sent = 0; sent < perHour; sent += EVENTS_PER_APPEND) {
        const now = clock.now();
        const events = Array.from({ length: Math.min(EVENTS_PER_APPEND, perHour - sent) }, () => ({
          user: Math.floor(random() * users),
          type: random() < 0.7 ? 'open' : 'buy',
          data: {},
          time: now,
        }));
        await appendEvents(processDatabase(), app().state, tenant.id, events);
        engine.wakeTenant(tenant.id);
        await engine.drain(tenant.id);
      }
      await clock.advance(HOUR);
      await engine.runTimers();
    }
    const counts = await engine.getCounts(tenant.id, instanceId);
    const moves = Object.values(counts.edges).reduce((a, b) => a + b, 0) + counts.entered;
    return { tenant, instanceId, start, end: clock.now(), moves, hourBack: hourBack! };
  } finally {
    await engine.stop();
    await runner.stop();
  }
}

export async function measurePaths(database: ScratchDatabase, users: number, repeats: number, profile = false): Promise<PathsFigures> {
  await useDatabase(database.url);
  const { tenant, instanceId, start, end, moves, hourBack } = await dayOfMoves(users);
  const rows = await database.query<{ rows: unknown; bulk: unknown }>(
    `SELECT COUNT(*) AS "rows", SUM(CASE WHEN "user" IS NULL THEN 1 ELSE 0 END) AS "bulk" FROM "Journal" WHERE "instanceId" = ?`,
    [instanceId],
  );
  const journal = `${Number(rows[0].rows).toLocaleString('en-US')} journal rows, ${Number(rows[0].bulk).toLocaleString('en-US')} of them bulk`;
  const window = { from: new Date(start).toISOString(), to: new Date(end + 1).toISOString() };
  const best = async (work: () => Promise<unknown>) => {
    let fastest = Number.POSITIVE_INFINITY;
    for (let i = 0; i < repeats; i++) {
      const began = performance.now();
      await work();
      fastest = Math.min(fastest, performance.now() - began);
    }
    return Math.round(fastest);
  };
  const paths = await instancePaths(processDatabase(), tenant, instanceId, window, end);
  const pathsMs = await best(() => instancePaths(processDatabase(), tenant, instanceId, window, end));
  const steps = ['welcome', 'wait', 'offer', 'bought'];
  const funnel = await instanceFunnel(processDatabase(), tenant, instanceId, { ...window, steps }, end);
  const funnelMs = await best(() => instanceFunnel(processDatabase(), tenant, instanceId, { ...window, steps }, end));
  const asOfCounts = async () => {
    const counts = await countsAsOf(processDatabase(), tenant, instanceId, hourBack.at, end);
    if (JSON.stringify(counts.steps) !== JSON.stringify(hourBack.steps)) {
      throw new Error(`asOf counts ${JSON.stringify(counts.steps)} differ from the engine's then: ${JSON.stringify(hourBack.steps)}`);
    }
  };
  const asOfUsers = async () => {
    const offer = await stepUsersAsOf(processDatabase(), tenant, instanceId, 'offer', hourBack.at, end);
    if (offer.size !== hourBack.steps.offer) throw new Error(`asOf users of offer: ${offer.size}, the engine had ${hourBack.steps.offer}`);
  };
  // --profile: where the replay's time goes (bench/tmp/profiles/bench-paths-asOf.cpuprofile).
  const [asOfMs, asOfUsersMs] = await profiled(profile, 'paths asOf', async () => [await best(asOfCounts), await best(asOfUsers)]);
  const shape = `${moves.toLocaleString('en-US')} moves on ${paths.edges.length} edges; ${journal}`;
  return {
    paths: { value: pathsMs, note: `(${shape}; best of ${repeats})`, details: { edges: paths.edges } },
    funnel: {
      value: funnelMs,
      note: `(${steps.join(' → ')}: ${funnel.steps.map((s) => s.users.toLocaleString('en-US')).join(' → ')}; best of ${repeats})`,
      details: { steps: funnel.steps },
    },
    asOf: {
      value: asOfMs,
      note: `(counts as of ${new Date(hourBack.at).toISOString()}, ${Math.round((end - hourBack.at) / 60_000)} min before the end, equal to the engine's then; the users of step offer then ${asOfUsersMs} ms; best of ${repeats})`,
      details: { steps: hourBack.steps },
    },
  };
}
