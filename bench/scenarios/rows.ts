// The per-user-rows baseline: the branch and timer journeys stored the way common journey builders store them,
// one row per user per journey holding the user's current step, updated per move, through Prisma.
// Measured at `rowUsers` users (1M at full scale); whole-crowd operations are also extrapolated linearly to the
// scenario's crowd so they compare with Crowdflow's figures, and the table says so.
import { registerApp, type App } from '../../server/app';
import { createApp, type AppOptions } from '../../server/create-app';
import { db } from '../../test/helpers/app-db';
import { parseEnv } from '../../server/env';
import type { BenchEvent } from '../lib/data';
import type { ScratchDatabase } from '../lib/database';
import { percentile, progress } from '../lib/report';

const JOURNEY = 'bench-journey';
const INSERT_CHUNK = 5_000;
const EVENT_BATCH = 1_000;

export interface RowsFigures {
  rowUsers: number;
  /** Prisma createMany time per user, measured over the first tenth of the rows. */
  startMsPerUser: number;
  countsP99Ms: number;
  exportCsvMs: number;
  applyEventsPerSecond: number;
  timerMs: number;
  storageBytesPerUser: number | null;
}

/** Points this process's Prisma client at the scratch database. */
/** Builds and registers an app on `url` (server/create-app.ts), after closing the one registered before. */
export async function useDatabase(url: string, options: AppOptions = {}): Promise<App> {
  await closeApp();
  const built = createApp({ env: parseEnv({ ...process.env, DATABASE_URL: url }), ...options });
  registerApp(built);
  return built;
}

/** Closes the registered app (its loops and storage), if any. */
export async function closeApp(): Promise<void> {
  await registerApp(undefined)?.close();
}

export async function measureRows(database: ScratchDatabase, rowUsers: number, events: BenchEvent[], countReads: number): Promise<RowsFigures> {
  await useDatabase(database.url);
  const prisma = db();
  const sizeBefore = await storageBytes(database);

  // Starting through Prisma is timed on the first tenth of the rows (createMany costs the same per row all along,
  // and a million rows through it take minutes on a loaded 2-core machine); the rest is bulk-inserted untimed by the
  // raw driver so that counts, export, events and timer run against the full table.
  const timedRows = Math.max(1, Math.round(rowUsers / 10));
  const tick = progress(`per-user rows on ${database.provider}: start (insert)`);
  let started = performance.now();
  for (let offset = 0; offset < timedRows; offset += INSERT_CHUNK) {
    const data = [];
    for (let user = offset; user < Math.min(timedRows, offset + INSERT_CHUNK); user++) data.push({ journeyId: JOURNEY, user: BigInt(user), step: 'wait' });
    await prisma.baselineUserStep.createMany({ data });
    tick(offset + data.length, timedRows);
  }
  const startMsPerUser = (performance.now() - started) / timedRows;
  const rest: unknown[][] = [];
  for (let user = timedRows; user < rowUsers; user++) rest.push([JOURNEY, user, 'wait']);
  await database.insertRows('BaselineUserStep', ['journeyId', 'user', 'step'], rest);
  const storageBytesPerUser = sizeAfterInsert(await storageBytes(database), sizeBefore, rowUsers);

  const countSamples: number[] = [];
  for (let i = 0; i < countReads; i++) {
    started = performance.now();
    await prisma.baselineUserStep.groupBy({ by: ['step'], where: { journeyId: JOURNEY }, _count: { _all: true } });
    countSamples.push(performance.now() - started);
  }

  started = performance.now();
  const exported = await prisma.baselineUserStep.findMany({ where: { journeyId: JOURNEY, step: 'wait' }, select: { user: true }, orderBy: { user: 'asc' } });
  Buffer.from(exported.map((row) => row.user).join('\n'));
  const exportCsvMs = performance.now() - started;

  const applyTick = progress(`per-user rows on ${database.provider}: events`);
  started = performance.now();
  for (let offset = 0; offset < events.length; offset += EVENT_BATCH) {
    await applyBatch(events.slice(offset, offset + EVENT_BATCH));
    applyTick(offset + EVENT_BATCH, events.length);
  }
  const applyEventsPerSecond = events.length / ((performance.now() - started) / 1000);

  started = performance.now();
  await prisma.baselineUserStep.updateMany({ where: { journeyId: JOURNEY, step: 'wait' }, data: { step: 'done', updatedAt: new Date() } });
  const timerMs = performance.now() - started;

  await prisma.baselineUserStep.deleteMany({ where: { journeyId: JOURNEY } });
  await closeApp();
  const figures = { rowUsers, startMsPerUser, countsP99Ms: percentile(countSamples, 99), exportCsvMs, applyEventsPerSecond, timerMs, storageBytesPerUser };
  console.log(
    `  per-user rows on ${database.provider}: ${Object.entries(figures)
      .map(([k, v]) => `${k} ${v === null ? 'n/a' : Math.round(v * 1000) / 1000}`)
      .join(', ')}`,
  );
  return figures;
}

/**
 * One batch of events the per-user-row way, generously batched: one query reads the batch's users' rows, then
 * each mover's row is updated, all in one transaction.
 */
async function applyBatch(batch: BenchEvent[]): Promise<void> {
  await db().$transaction(async (tx) => {
    const users = [...new Set(batch.map((event) => BigInt(event.user)))];
    const rows = await tx.baselineUserStep.findMany({ where: { journeyId: JOURNEY, user: { in: users } }, select: { user: true, step: true } });
    const stepOf = new Map(rows.map((row) => [Number(row.user), row.step]));
    for (const event of batch) {
      if (stepOf.get(event.user) !== 'wait' || event.type !== 'purchase') continue;
      const step = event.data.amount > 100 ? 'big' : 'small';
      stepOf.set(event.user, step);
      await tx.baselineUserStep.update({ where: { journeyId_user: { journeyId: JOURNEY, user: BigInt(event.user) } }, data: { step, updatedAt: new Date() } });
    }
  });
}

/** Bytes the table and its indexes take on disk (null where the database cannot say). */
async function storageBytes(database: ScratchDatabase): Promise<number | null> {
  if (database.provider === 'postgres') {
    const [row] = await database.query<{ bytes: string }>(`SELECT pg_total_relation_size('"BaselineUserStep"')::text AS bytes`);
    return Number(row.bytes);
  }
  try {
    const [row] = await database.query<{ bytes: number }>(`SELECT SUM(pgsize) AS bytes FROM dbstat WHERE name LIKE '%BaselineUserStep%'`);
    return Number(row.bytes ?? 0);
  } catch {
    return null;
  }
}

function sizeAfterInsert(after: number | null, before: number | null, users: number): number | null {
  return after === null || before === null ? null : (after - before) / users;
}
