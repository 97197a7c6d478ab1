// Profiles at scale (issue 14), in this process on a scratch database: import N profiles (3 attributes: plan, age,
// time zone) through the import library from a streamed NDJSON body while sampling counts of a running instance;
// a timer step over N users with `profile.plan == "pro" && profile.age >= 30` fired and counted; audience estimates
// of the same condition; the index's load from its snapshot and its rebuild from rows; memory per profile. Each
// beside its limit: the same plan as bare bitmap algebra, and the index built in memory with no database.
import { request as httpRequest } from 'node:http';
import { ManualClock } from '../../server/clock';
import { compileCondition, evaluatePlan, requireCondition } from '../../server/conditions/compile';
import { planResolver } from '../../server/profiles/index-plan';
import { saveCrowd } from '../../server/crowd';
import { app } from '../../server/app';
import { Engine } from '../../server/engine/engine';
import { WorkflowDefinition } from '../../core/model/workflow';
import { createProcedureRunner } from '../../server/procedures/runner';
import { estimateAudience } from '../../server/profiles/audience';
import { importProfiles } from '../../server/profiles/import';
import { upsertProfiles } from '../../server/profiles/profiles';
import { dropProfileIndex, profileIndex, profileIndexLoad, saveProfileSnapshot } from '../../server/profiles/index-store';
import { ProfileIndex } from '../../server/profiles/index-tenant';
import { db, database as processDatabase } from '../../test/helpers/app-db';
import { createTenant } from '../../server/tenants/tenants';
import { createWorkflow } from '../../server/workflows/workflows';
import { denseBitmap } from '../lib/data';
import type { ScratchDatabase } from '../lib/database';
import { publishedCounts } from '../lib/published-counts';
import { percentile } from '../lib/report';
import { BENCH_ADMIN_TOKEN, startServer } from '../lib/server';
import type { Measured } from './journey';
import { useDatabase } from './rows';

export const PROFILE_CONDITION = 'profile.plan == "pro" && profile.age >= 30';
const ZONES = ['Europe/Amsterdam', 'Europe/Paris', 'America/New_York', 'Asia/Tokyo', 'UTC', 'Europe/Berlin', 'America/Sao_Paulo', 'Australia/Sydney'];

export interface ProfileFigures {
  import: Measured;
  importLimit: number;
  countsDuringImport: Measured;
  timer: Measured;
  planLimit: number;
  audience: Measured;
  /** Estimates each right after a one-profile write: the plan is evaluated anew, not read from the index's results. */
  audienceAfterWrite: Measured;
  snapshotLoad: Measured;
  rowsRebuild: Measured;
  memory: Measured;
  http?: { import: Measured; countsDuringImport: Measured; bootToFirstCount: Measured };
}

/** Profile i: a plan (a quarter "pro"), an age 18–80 and a time zone, deterministic per user. */
export function benchProfile(user: number): { plan: string; age: number; tz: string } {
  const mixed = Math.imul(user ^ 0x9e3779b9, 0x85ebca6b) >>> 0;
  return { plan: mixed % 4 === 0 ? 'pro' : mixed % 4 === 1 ? 'trial' : 'free', age: 18 + (mixed % 63), tz: ZONES[(mixed >>> 8) % ZONES.length] };
}

/** NDJSON of users first … first+n−1, produced as it is read (a 10M-line body is never held whole). */
export function profileStream(n: number, linesPerChunk = 5_000, first = 0): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let user = first;
  return new ReadableStream({
    pull(controller) {
      if (user >= first + n) return controller.close();
      let text = '';
      for (const end = Math.min(first + n, user + linesPerChunk); user < end; user++)
        text += `{"user":${user},"attributes":${JSON.stringify(benchProfile(user))}}\n`;
      controller.enqueue(encoder.encode(text));
    },
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function settledHeap(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  gc?.();
  return process.memoryUsage().rss;
}

export async function measureProfiles(database: ScratchDatabase, users: number): Promise<ProfileFigures> {
  const { figures, tenantName, instanceId } = await measureInProcess(database, users);
  try {
    figures.http = await measureOverHttp(database, users, tenantName, instanceId);
  } catch (error) {
    console.log(`  ! profiles over HTTP failed: ${(error as Error).message}`);
  }
  return figures;
}

/**
 * A real server over the same database: boot until the running instance's first count is answered (N profiles and
 * their index snapshot in the database), then N more profiles imported over HTTP for a second tenant while counts are
 * read over HTTP every 5 ms.
 */
async function measureOverHttp(database: ScratchDatabase, users: number, tenantName: string, instanceId: string): Promise<ProfileFigures['http']> {
  const started = performance.now();
  const server = await startServer(database.url);
  try {
    const headers = { authorization: `Bearer ${BENCH_ADMIN_TOKEN}` };
    const countsUrl = `${server.baseUrl}/api/v1/tenants/${tenantName}/instances/${instanceId}/counts`;
    for (;;) {
      const response = await fetch(countsUrl, { headers });
      const body = (await response.json()) as { total?: number };
      if (response.ok && body.total === users) break;
      await sleep(5);
    }
    const bootToFirstCount = performance.now() - started;
    const created = await fetch(`${server.baseUrl}/api/v1/tenants`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'profiles-http', partitions: 8 }),
    });
    if (!created.ok) throw new Error(`creating the HTTP tenant: ${created.status} ${await created.text()}`);
    // The route's first call loads its modules: not part of what an import costs other requests.
    const warm = await fetch(`${server.baseUrl}/api/v1/tenants/profiles-http/profiles/import`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/x-ndjson' },
      body: '{"user": 0, "attributes": {}}',
    });
    if (!warm.ok) throw new Error(`warming the import route: ${warm.status} ${await warm.text()}`);
    console.log(`  importing ${users.toLocaleString('en-US')} profiles over HTTP…`);
    // The body is generated before the clock starts, so this process's own work does not delay its count reads.
    const pieces: Uint8Array[] = [];
    const generator = profileStream(users).getReader();
    for (let piece = await generator.read(); !piece.done; piece = await generator.read()) pieces.push(piece.value);
    const samples: number[] = [];
    let importing = true;
    const reader = (async () => {
      while (importing) {
        const before = performance.now();
        await (await fetch(countsUrl, { headers })).arrayBuffer();
        samples.push(performance.now() - before);
        await sleep(5);
      }
    })().catch((error: Error) => {
      importing = false;
      throw new Error(`reading counts during the import: ${error.message}\n${server.log().slice(-3000)}`);
    });
    const importStarted = performance.now();
    const response = await postPieces(
      `${server.baseUrl}/api/v1/tenants/profiles-http/profiles/import`,
      { ...headers, 'content-type': 'application/x-ndjson' },
      pieces,
    ).catch((error: Error) => ({ status: 0, text: `(${error.message})\n${server.log().slice(-3000)}` }));
    const importMs = performance.now() - importStarted;
    importing = false;
    await reader;
    if (response.status !== 200) throw new Error(`import over HTTP: ${response.status} ${response.text.slice(0, 300)}`);
    return {
      import: { value: importMs, note: `(server CPU ${Math.round(server.cpuMs() / 1000)} s in all)` },
      countsDuringImport: {
        value: percentile(samples, 99),
        note: `(p99 of ${samples.length} over HTTP, median ${percentile(samples, 50).toFixed(1)}, max ${Math.round(Math.max(...samples))} ms)`,
      },
      bootToFirstCount: { value: bootToFirstCount, note: `(server up in ${Math.round(server.bootMs)} ms)` },
    };
  } finally {
    await server.stop();
  }
}

/**
 * POSTs a body streamed from `pieces` with node:http: fetch (undici) gives up on a response whose headers take more
 * than 300 s, and an import of millions of profiles answers only when it is done.
 */
export function postPieces(url: string, headers: Record<string, string>, pieces: Uint8Array[]): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(url, { method: 'POST', headers }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, text }));
      response.on('error', reject);
    });
    request.on('error', reject);
    let next = 0;
    const write = () => {
      while (next < pieces.length) if (!request.write(pieces[next++])) return void request.once('drain', write);
      request.end();
    };
    write();
  });
}

async function measureInProcess(database: ScratchDatabase, users: number): Promise<{ figures: ProfileFigures; tenantName: string; instanceId: string }> {
  await useDatabase(database.url);
  const clock = new ManualClock(Date.UTC(2026, 0, 1, 12, 0, 30));
  const registered = app();
  const runner = createProcedureRunner(registered.database, { pollMs: 50 });
  const { latest: published, publish: publishCounts } = publishedCounts();
  const engine = new Engine({ database: registered.database, ingestState: registered.state, clock, runner, owner: 'bench-profiles', publishCounts });
  await runner.start();
  await engine.start();
  await engine.loaded();
  try {
    const view = await createTenant(processDatabase(), { name: 'profiles', partitions: 8 });
    const tenant = { ...view, createdAt: new Date(view.createdAt) };
    const crowd = denseBitmap(users);
    await saveCrowd(processDatabase(), tenant.id, 'all', crowd, 'replace');
    const definition = WorkflowDefinition.parse({
      steps: [
        { name: 'wait', kind: 'timer', cron: '0 * * * * *', condition: PROFILE_CONDITION, next: 'done' },
        { name: 'done', kind: 'direct' },
      ],
    });
    const workflow = await createWorkflow(processDatabase(), tenant, { name: 'profiles', definition });
    const { procedureId, instanceId } = await engine.startInstance(tenant.id, workflow.id, { crowd: 'all' });
    await runner.await(procedureId, 600_000);

    // Import while a reader asks for counts every 5 ms: how long the import holds the event loop.
    console.log(`  importing ${users.toLocaleString('en-US')} profiles…`);
    const countSamples: number[] = [];
    let importing = true;
    const reader = (async () => {
      while (importing) {
        const before = performance.now();
        await engine.getCounts(tenant.id, instanceId);
        countSamples.push(performance.now() - before);
        await sleep(5);
      }
    })();
    const importStarted = performance.now();
    const cpuBefore = process.cpuUsage();
    const imported = await importProfiles(processDatabase(), tenant.id, profileStream(users), 'ndjson');
    const importMs = performance.now() - importStarted;
    const importCpu = process.cpuUsage(cpuBefore);
    importing = false;
    await reader;
    console.log(`  imported in ${(importMs / 1000).toFixed(1)} s (${imported.chunks} chunks)`);

    const index = await profileIndex(processDatabase(), tenant.id);
    const plan = compileCondition(requireCondition(PROFILE_CONDITION)).plan!;
    const resolver = planResolver(() => undefined, index);
    const planSamples: number[] = [];
    for (let i = 0; i < 20; i++) {
      const before = performance.now();
      evaluatePlan(plan, resolver, crowd);
      planSamples.push(performance.now() - before);
    }
    const expected = evaluatePlan(plan, resolver, crowd).size;

    // The first tick plans the cron; the next one, a minute later, fires it.
    await engine.runTimers();
    // Advancing the clock wakes the engine's timer loop, which may fire the step itself: both are inside the window,
    // which ends when counts showing the moved users are published (work after the commit, such as checkpoints, is not in it).
    const fired = performance.now();
    await clock.advance(60_000);
    const tick = engine.runTimers();
    let moved = 0;
    while (moved !== expected) {
      moved = published.get(instanceId)?.counts.steps.done ?? 0;
      if (moved === expected) break;
      if (performance.now() - fired > 600_000) throw new Error(`the timer moved ${moved} users, the plan says ${expected}`);
      await new Promise((resolve) => setImmediate(resolve));
    }
    const timerMs = published.get(instanceId)!.at - fired;
    await tick;

    const audienceSamples: number[] = [];
    for (let i = 0; i < 110; i++) {
      const before = performance.now();
      const estimate = await estimateAudience(processDatabase(), tenant.id, { condition: PROFILE_CONDITION, sample: 20 });
      if (i >= 10) audienceSamples.push(performance.now() - before); // after warming up
      if (estimate.count !== expected) throw new Error(`audience ${estimate.count} ≠ ${expected}`);
    }
    // Right after a profile write, the index's plan results are stale: the estimate evaluates the plan again.
    const coldSamples: number[] = [];
    for (let i = 0; i < 20; i++) {
      await upsertProfiles(processDatabase(), tenant.id, [{ user: i, attributes: { touched: i } }]);
      const before = performance.now();
      const estimate = await estimateAudience(processDatabase(), tenant.id, { condition: PROFILE_CONDITION, sample: 20 });
      coldSamples.push(performance.now() - before);
      if (estimate.count !== expected) throw new Error(`audience after a write ${estimate.count} ≠ ${expected}`);
    }
    await saveProfileSnapshot(processDatabase(), tenant.id); // so the load below reads a current snapshot

    // Boot: the index from its snapshot; after a crash between a write and the next snapshot, from the rows.
    const bitmapBytes = index.bitmapBytes();
    dropProfileIndex(processDatabase(), tenant.id);
    const rssBefore = settledHeap();
    await profileIndex(processDatabase(), tenant.id);
    const snapshotLoad = profileIndexLoad(processDatabase(), tenant.id)!;
    const rssGrowth = settledHeap() - rssBefore;
    await db().profileIndexSnapshot.delete({ where: { tenantId: tenant.id } });
    dropProfileIndex(processDatabase(), tenant.id);
    console.log('  rebuilding the index from rows…');
    await profileIndex(processDatabase(), tenant.id);
    const rowsRebuild = profileIndexLoad(processDatabase(), tenant.id)!;

    // The limit of the import: the same profiles parsed and indexed in memory, no database.
    console.log('  the in-memory limit of the import…');
    const limitStarted = performance.now();
    const bare = new ProfileIndex();
    const batch: Array<{ user: number; after: Record<string, unknown> }> = [];
    for (let user = 0; user < users; user++) {
      batch.push({ user, after: JSON.parse(JSON.stringify(benchProfile(user))) });
      if (batch.length === 20_000) bare.apply(batch.splice(0));
    }
    bare.apply(batch);
    const importLimit = performance.now() - limitStarted;

    const figures: ProfileFigures = {
      import: {
        value: importMs,
        note: `(${imported.chunks} chunks; process CPU ${((importCpu.user + importCpu.system) / 1e6).toFixed(1)} s, generating the body included)`,
      },
      importLimit,
      countsDuringImport: { value: percentile(countSamples, 99), note: `(p99 of ${countSamples.length}, max ${Math.round(Math.max(...countSamples))} ms)` },
      timer: { value: timerMs, note: `(${expected.toLocaleString('en-US')} moved)` },
      planLimit: percentile(planSamples, 50),
      audience: { value: percentile(audienceSamples, 99), note: `(p99 of ${audienceSamples.length}, median ${percentile(audienceSamples, 50).toFixed(1)} ms)` },
      audienceAfterWrite: { value: percentile(coldSamples, 99), note: `(p99 of ${coldSamples.length}, median ${percentile(coldSamples, 50).toFixed(1)} ms)` },
      snapshotLoad: { value: snapshotLoad.ms, note: `(${snapshotLoad.source})` },
      rowsRebuild: { value: rowsRebuild.ms, note: `(${rowsRebuild.source})` },
      memory: { value: bitmapBytes / users, note: '(roaring bytes per profile)', details: { rssGrowthPerProfileOnLoad: rssGrowth / users } },
    };
    return { figures, tenantName: view.name, instanceId };
  } finally {
    await engine.stop();
    await runner.stop();
  }
}
