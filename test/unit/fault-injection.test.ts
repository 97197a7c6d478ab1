import { describe, expect, it } from 'vitest';
import { FAULT_KINDS, type FaultKind } from '../fixtures/faulty-database';
import { runScenario, type ScenarioSize } from '../fixtures/fault-scenario';

// Issue 36 §4: a journey, a profile import, an instance's start and stop and webhook deliveries, in process, with a
// share of every storage operation failing transiently (each transient kind of the provider, seeded), against the
// same input without faults. `npm run soak` runs it longer: CROWDFLOW_SOAK_SEED, CROWDFLOW_SOAK_EVENTS (events in
// all), CROWDFLOW_SOAK_RATE (the failing share, 0.05 by default).

const provider = (process.env.CROWDFLOW_TEST_PROVIDER ?? 'sqlite') as 'sqlite' | 'postgres';
const seed = Number(process.env.CROWDFLOW_SOAK_SEED ?? 36);
const events = Number(process.env.CROWDFLOW_SOAK_EVENTS ?? 600);
const rate = Number(process.env.CROWDFLOW_SOAK_RATE ?? 0.05);
const eventsPerBatch = 50;
const size: ScenarioSize = { partitions: 4, users: Math.max(100, events / 2), eventBatches: Math.ceil(events / eventsPerBatch), eventsPerBatch };
const soaking = process.env.CROWDFLOW_SOAK_EVENTS !== undefined;

describe(`fault injection (${provider}, seed ${seed}, ${rate * 100}% of storage operations failing)`, () => {
  it(
    'applies every event once, delivers every notification once, fails no procedure and answers the integrator no 503',
    async () => {
      const clean = await runScenario({ provider, rate: 0, seed }, size);
      expect(clean.costs.injected).toEqual([]);
      const faulty = await runScenario({ provider, rate, seed }, size);

      const byKind = (side: string) =>
        Object.fromEntries(
          (FAULT_KINDS[provider] as FaultKind[]).map((kind) => [kind, faulty.costs.injected.filter((f) => f.kind === kind && f.side === side).length]),
        );
      console.info(
        `[faults] ${provider} seed ${seed}: ${faulty.costs.injected.length} of ${faulty.costs.operations} storage operations failed; prisma`,
        byKind('prisma'),
        'raw',
        byKind('raw'),
      );
      // Every kind, and both sides, were met: what follows held through all of them.
      for (const kind of FAULT_KINDS[provider] as FaultKind[]) expect(faulty.costs.injected.some((f) => f.kind === kind)).toBe(true);
      for (const side of ['prisma', 'raw']) expect(faulty.costs.injected.some((f) => f.side === side)).toBe(true);

      expect(faulty.outcome).toEqual(clean.outcome);
      expect(clean.outcome.delivered.length).toBeGreaterThan(0);
      expect(new Set(faulty.outcome.delivered).size).toBe(faulty.outcome.delivered.length);
      expect(faulty.costs.duplicateDeliveries).toEqual([]);
      expect(faulty.costs.failedDeliveries).toBe(0);
      expect(faulty.costs.unfinishedProcedures).toEqual([]);
      expect(faulty.costs.unavailable).toEqual({});
    },
    soaking ? 3_600_000 : 60_000,
  );
});
