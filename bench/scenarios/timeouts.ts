// Timeouts and local-time timers at scale (issue 18), engine in this process on a scratch database, on a ManualClock:
// - N users in a branch step with `timeout: {after: "2d"}` all entered at the start, so all time out at once: the
//   clock moves 2 days on, and the figure is fire → counts show every user in the timeout's step;
// - N users with profiles naming one of 5 time zones (1 in 50 without one: the default zone) in a timer step firing
//   at 09:00 in each user's zone: the clock moves to each zone's 09:00 in turn, each figure fire → counts show that
//   zone's users moved. The value is the slowest zone.
import { ManualClock } from '../../server/clock';
import { saveCrowd } from '../../server/crowd';
import { app } from '../../server/app';
import { Engine } from '../../server/engine/engine';
import { WorkflowDefinition } from '../../core/model/workflow';
import { createProcedureRunner } from '../../server/procedures/runner';
import { importProfiles } from '../../server/profiles/import';
import { saveProfileSnapshot } from '../../server/profiles/index-store';
import { database as processDatabase } from '../../test/helpers/app-db';
import { createTenant } from '../../server/tenants/tenants';
import { createWorkflow } from '../../server/workflows/workflows';
import { denseBitmap } from '../lib/data';
import type { ScratchDatabase } from '../lib/database';
import { publishedCounts } from '../lib/published-counts';
import type { Measured } from './journey';
import { useDatabase } from './rows';

export interface TimeoutFigures {
  timeout: Measured;
  localTime: Measured;
}

/** The zones and when 09:00 comes there on Saturday 2026-01-03 (UTC hours), in firing order; "UTC" for users without one. */
const ZONES: [zone: string, utcHour: number][] = [
  ['Asia/Tokyo', 0],
  ['Asia/Kolkata', 3.5],
  ['Europe/Amsterdam', 8],
  ['UTC', 9],
  ['America/New_York', 14],
  ['America/Los_Angeles', 17],
];
const NO_ZONE_EVERY = 50;

/** User i's zone (null: none, 1 in 50), deterministic and spread over the whole id range. */
function zoneOf(user: number): string | null {
  if (user % NO_ZONE_EVERY === 0) return null;
  const named = ZONES.filter(([zone]) => zone !== 'UTC');
  return named[(Math.imul(user ^ 0x9e3779b9, 0x85ebca6b) >>> 8) % named.length][0];
}

function zoneProfiles(n: number): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let user = 0;
  return new ReadableStream({
    pull(controller) {
      if (user >= n) return controller.close();
      let text = '';
      for (const end = Math.min(n, user + 5_000); user < end; user++) {
        const zone = zoneOf(user);
        text += `{"user":${user},"attributes":${zone ? `{"timezone":"${zone}"}` : '{}'}}\n`;
      }
      controller.enqueue(encoder.encode(text));
    },
  });
}

export async function measureTimeouts(database: ScratchDatabase, users: number): Promise<TimeoutFigures> {
  await useDatabase(database.url);
  const clock = new ManualClock(Date.UTC(2025, 11, 30, 12, 0, 30));
  const registered = app();
  const runner = createProcedureRunner(registered.database, { pollMs: 50 });
  const { latest: published, publish: publishCounts } = publishedCounts();
  const engine = new Engine({ database: registered.database, ingestState: registered.state, clock, runner, owner: 'bench-timeouts', publishCounts });
  await runner.start();
  await engine.start();
  await engine.loaded();
  try {
    const view = await createTenant(processDatabase(), { name: 'timeouts', partitions: 8 });
    const tenant = { ...view, createdAt: new Date(view.createdAt) };
    await saveCrowd(processDatabase(), tenant.id, 'all', denseBitmap(users), 'replace');
    const start = async (name: string, definition: unknown) => {
      const workflow = await createWorkflow(processDatabase(), tenant, { name, definition: WorkflowDefinition.parse(definition) });
      const { procedureId, instanceId } = await engine.startInstance(tenant.id, workflow.id, { crowd: 'all' });
      await runner.await(procedureId, 600_000);
      return instanceId;
    };
    /** Moves the clock to `at` and returns the wall time until `step` holds `expected` users. */
    const fireAndCount = async (at: number, instanceId: string, step: string, expected: number) => {
      // The clock first goes to a second before: what the engine does while simulated hours pass (counts samples
      // each minute, housekeeping) is not in the figure.
      await clock.set(at - 1_000);
      await engine.runTimers();
      // Advancing the clock wakes the engine's timer loop, which may fire first: both are inside the window, which
      // ends when counts showing the moved users are published (work after the commit, such as checkpoints, is not in it).
      const fired = performance.now();
      await clock.set(at);
      const tick = engine.runTimers();
      for (;;) {
        const moved = published.get(instanceId)?.counts.steps[step] ?? 0;
        if (moved === expected) break;
        if (performance.now() - fired > 600_000) throw new Error(`${step} holds ${moved} users, expected ${expected}`);
        await new Promise((resolve) => setImmediate(resolve));
      }
      const elapsed = published.get(instanceId)!.at - fired;
      await tick;
      return elapsed;
    };

    console.log(`  ${users.toLocaleString('en-US')} users timing out of a branch step at once…`);
    const waitId = await start('timeout', {
      steps: [
        { name: 'wait', kind: 'branch', branches: [{ condition: 'event.type == "purchase"', next: 'bought' }], timeout: { after: '2d', next: 'reminder' } },
        { name: 'bought', kind: 'direct' },
        { name: 'reminder', kind: 'direct' },
      ],
    });
    // Users entered in the 1-minute bucket of the start; the bucket's end plus 2 days is when they time out.
    const bucketEnd = Math.floor(clock.now() / 60_000) * 60_000 + 60_000;
    const timeoutMs = await fireAndCount(bucketEnd + 2 * 86_400_000, waitId, 'reminder', users);

    console.log(`  importing ${users.toLocaleString('en-US')} profiles with a time zone…`);
    const importStarted = performance.now();
    await importProfiles(processDatabase(), tenant.id, zoneProfiles(users), 'ndjson');
    const importMs = performance.now() - importStarted;
    // Written now, not a few seconds after the import's last write: the snapshot of the index would otherwise be
    // written during the firings below.
    await saveProfileSnapshot(processDatabase(), tenant.id);
    const expected = new Map<string, number>();
    for (let user = 0; user < users; user++) {
      const zone = zoneOf(user) ?? 'UTC';
      expected.set(zone, (expected.get(zone) ?? 0) + 1);
    }
    await clock.set(Date.UTC(2026, 0, 2, 23)); // Friday 23:00 UTC: Saturday 09:00 is yet to come in every zone
    const morningId = await start('local-time', {
      steps: [
        { name: 'morning', kind: 'timer', cron: '0 0 9 * * *', tzFromProfile: 'timezone', next: 'done' },
        { name: 'done', kind: 'direct' },
      ],
    });
    // The first tick plans over the zones present (its firing came at the start: provisional).
    await clock.advance(1_000);
    await engine.runTimers();
    const perZone: Record<string, number> = {};
    let moved = 0;
    for (const [zone, utcHour] of ZONES) {
      moved += expected.get(zone) ?? 0;
      const at = Date.UTC(2026, 0, 3) + utcHour * 3_600_000;
      perZone[zone] = Math.round(await fireAndCount(at, morningId, 'done', moved));
    }
    const slowest = Math.max(...Object.values(perZone));
    const sizes = ZONES.map(([zone]) => `${zone} ${((expected.get(zone) ?? 0) / 1e6).toFixed(1)}M: ${perZone[zone]} ms`);
    return {
      timeout: { value: timeoutMs, note: `(${users.toLocaleString('en-US')} moved)` },
      localTime: {
        value: slowest,
        note: `(slowest of ${sizes.length} zone firings; ${sizes.join(', ')})`,
        details: { perZoneMs: perZone, importMs: Math.round(importMs) },
      },
    };
  } finally {
    await engine.stop();
    await runner.stop();
  }
}
