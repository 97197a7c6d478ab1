// The statistics of a holdout's lift (core/model/lift.ts) against values computed here another way, from seeded
// data: each user's group and conversion drawn at random, the groups counted by plain loops, the normal tail by
// Simpson's rule over the density (not the erfc series the module uses). And the holdout's validation.
import { describe, expect, it } from 'vitest';
import { RoaringBitmap32 } from '../../server/crowd/bitmap';
import { heldOutUsers } from '../../server/engine/holdout-bitmap';
import { holdoutPlan, isHeldOut } from '../../core/model/holdout';
import { liftOf } from '../../core/model/lift';
import { validateWorkflow } from '../../core/model/validate';
import { seededRandom } from '../helpers/seeded-random';

/** P(|Z| > z) for a standard normal Z: 1 − 2·∫₀^z φ, by Simpson's rule with 20,000 intervals. */
function twoSidedTail(z: number): number {
  const n = 20_000;
  const h = Math.abs(z) / n;
  const phi = (x: number) => Math.exp((-x * x) / 2) / Math.sqrt(2 * Math.PI);
  let sum = phi(0) + phi(Math.abs(z));
  for (let i = 1; i < n; i++) sum += (i % 2 ? 4 : 2) * phi(i * h);
  return 1 - 2 * ((h / 3) * sum);
}

/** The figures a textbook computes for two groups of sizes n1, n2 with x1, x2 successes. */
function textbook(x1: number, n1: number, x2: number, n2: number) {
  const p1 = x1 / n1;
  const p2 = x2 / n2;
  const pooled = (x1 + x2) / (n1 + n2);
  const z = (p1 - p2) / Math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2));
  const se = Math.sqrt((p1 * (1 - p1)) / n1 + (p2 * (1 - p2)) / n2);
  return { absolute: p1 - p2, relative: (p1 - p2) / p2, low: p1 - p2 - 1.959964 * se, high: p1 - p2 + 1.959964 * se, z, p: twoSidedTail(z) };
}

describe('holdout lift', () => {
  it('matches a hand-checked case: 120 of 1,000 treated against 90 of 1,000 held out', () => {
    const lift = liftOf({ entered: 2000, converted: 210, holdout: { entered: 1000, converted: 90 } })!;
    expect(lift.treatment).toEqual({ users: 1000, converted: 120, rate: 0.12 });
    expect(lift.holdout).toEqual({ users: 1000, converted: 90, rate: 0.09 });
    expect(lift.absolute).toBeCloseTo(0.03, 12);
    expect(lift.relative).toBeCloseTo(1 / 3, 12);
    // sqrt(.12·.88/1000 + .09·.91/1000) = .0136931; ± 1.96 of it.
    expect(lift.interval!.low).toBeCloseTo(0.00316, 5);
    expect(lift.interval!.high).toBeCloseTo(0.05684, 5);
    // pooled .105: sqrt(.105·.895·.002) = .0137095; z = 2.18826, p = .02865.
    expect(lift.z).toBeCloseTo(2.18826, 4);
    expect(lift.pValue).toBeCloseTo(0.02865, 4);
    expect(lift.enoughData).toBe(true);
    expect(lift.significant).toBe(true);
  });

  for (const seed of [1, 2, 3, 4, 5]) {
    it(`agrees with the textbook formulas on seeded users (seed ${seed})`, () => {
      const random = seededRandom(seed);
      const plan = holdoutPlan({ percent: 5 + random() * 45 }, `wf-${seed}`)!;
      const [treatedRate, heldRate] = [0.02 + random() * 0.2, 0.02 + random() * 0.2];
      const n = 2000 + Math.floor(random() * 20_000);
      let [n1, x1, n2, x2] = [0, 0, 0, 0];
      for (let user = 0; user < n; user++) {
        const id = Math.floor(random() * 4294967295);
        if (isHeldOut(plan, id)) {
          n2++;
          if (random() < heldRate) x2++;
        } else {
          n1++;
          if (random() < treatedRate) x1++;
        }
      }
      const lift = liftOf({ entered: n1 + n2, converted: x1 + x2, holdout: { entered: n2, converted: x2 } })!;
      const want = textbook(x1, n1, x2, n2);
      expect(lift.treatment).toEqual({ users: n1, converted: x1, rate: x1 / n1 });
      expect(lift.holdout).toEqual({ users: n2, converted: x2, rate: x2 / n2 });
      expect(lift.absolute).toBeCloseTo(want.absolute, 12);
      expect(lift.relative).toBeCloseTo(want.relative, 10);
      expect(lift.interval!.low).toBeCloseTo(want.low, 6);
      expect(lift.interval!.high).toBeCloseTo(want.high, 6);
      expect(lift.z).toBeCloseTo(want.z, 10);
      expect(Math.abs(lift.pValue! - want.p)).toBeLessThan(1e-6);
      const enough = Math.min(x1, n1 - x1, x2, n2 - x2) >= 5;
      expect(lift.enoughData).toBe(enough);
      expect(lift.significant).toBe(enough && want.p < 0.05);
    });
  }

  it('says nothing it cannot measure: no goal or no holdout, an empty group, nobody converted', () => {
    expect(liftOf({ entered: 10, converted: 2 })).toBeNull();
    expect(liftOf({ entered: 10, holdout: { entered: 2 } })).toBeNull();
    const empty = liftOf({ entered: 10, converted: 2, holdout: { entered: 0, converted: 0 } })!;
    expect(empty.holdout.rate).toBeNull();
    expect([empty.absolute, empty.relative, empty.interval, empty.z, empty.pValue, empty.significant]).toEqual([null, null, null, null, null, false]);
    const none = liftOf({ entered: 100, converted: 0, holdout: { entered: 10, converted: 0 } })!;
    expect([none.absolute, none.relative, none.interval, none.z, none.pValue, none.enoughData]).toEqual([0, null, { low: 0, high: 0 }, null, null, false]);
    // One conversion in the holdout: figures, but no verdict, even where p < 0.05.
    const few = liftOf({ entered: 2000, converted: 301, holdout: { entered: 1000, converted: 1 } })!;
    expect(few.pValue).toBeLessThan(0.05);
    expect([few.enoughData, few.significant]).toEqual([false, false]);
  });

  it('holds out a share close to the percent, the same users every time, and nobody at 0%', () => {
    const plan = holdoutPlan({ percent: 10 }, 'wf')!;
    let held = 0;
    for (let user = 0; user < 100_000; user++) if (isHeldOut(plan, user)) held++;
    expect(Math.abs(held - 10_000)).toBeLessThan(4 * Math.sqrt(100_000 * 0.1 * 0.9));
    expect(isHeldOut(holdoutPlan({ percent: 10 }, 'wf')!, 12345)).toBe(isHeldOut(plan, 12345));
    expect(holdoutPlan({ percent: 0 }, 'wf')).toBeNull();
    expect(holdoutPlan(undefined, 'wf')).toBeNull();
  });

  it("splits a bitmap by its blocks' masks exactly as the per-user function decides, dense or sparse", () => {
    const random = seededRandom(11);
    const plan = holdoutPlan({ percent: 17.5 }, 'wf-bitmap')!;
    const dense = Array.from({ length: 400_000 }, (_, i) => 3 * 65_536 + i).filter(() => random() < 0.4);
    const sparse = [...new Set(Array.from({ length: 5_000 }, () => Math.floor(random() * 4294967296)))].sort((a, b) => a - b);
    for (const ids of [dense, sparse, [0, 65_535, 65_536, 4294967295]]) {
      const held = heldOutUsers(plan, RoaringBitmap32.from(ids)).toArray();
      expect(held).toEqual(ids.filter((user) => isHeldOut(plan, user)));
      if (ids === dense) expect(Math.abs(held.length - ids.length * 0.175)).toBeLessThan(4 * Math.sqrt(ids.length * 0.175 * 0.825));
    }
    // The masks laid over the first dense call's blocks are kept for the next calls: one inside that span, one past it.
    const inside = dense.filter((user) => user >>> 16 === 5 && user % 3 === 0);
    const past = Array.from({ length: 200_000 }, (_, i) => 7 * 65_536 + i).filter(() => random() < 0.5);
    for (const ids of [inside, past, dense]) {
      expect(heldOutUsers(plan, RoaringBitmap32.from(ids)).toArray()).toEqual(ids.filter((user) => isHeldOut(plan, user)));
    }
  });

  it('keeps the masks of the last few plans by what they hold out, and decides exactly after older ones are freed', () => {
    const random = seededRandom(5);
    const dense = Array.from({ length: 200_000 }, (_, i) => 2 * 65_536 + i).filter(() => random() < 0.5);
    const users = RoaringBitmap32.from(dense);
    // Six workflows' plans, each asked for twice through a new plan object (as every start builds its own), round
    // robin: more plans than are kept, so masks are freed and built again between the asks.
    for (let round = 0; round < 2; round++) {
      for (let w = 0; w < 6; w++) {
        const plan = holdoutPlan({ percent: 5 + w }, `wf-kept-${w}`)!;
        expect(heldOutUsers(plan, users).toArray()).toEqual(dense.filter((user) => isHeldOut(plan, user)));
      }
    }
  });

  it('is validated by validateWorkflow(): 0 to 50 percent, a clear problem otherwise', () => {
    const problems = (holdout: unknown) => {
      const result = validateWorkflow({ steps: [{ name: 'a', kind: 'direct' }], holdout }, { now: 0 });
      return result.ok ? [] : result.problems.map((p) => `${p.code}: ${p.message}`);
    };
    expect(problems({ percent: 10 })).toEqual([]);
    expect(problems({ percent: 0 })).toEqual([]);
    expect(problems({ percent: 50, seed: 'q4' })).toEqual([]);
    expect(problems({ percent: 60 })).toEqual(['bad_holdout: Workflow holdout.percent 60 is over 50: hold out at most half of the entering users, e.g. 10']);
    expect(problems({ percent: -1 })).toEqual(['bad_holdout: Workflow holdout.percent -1 is below 0: hold out 0 to 50% of entering users']);
    expect(problems({ percent: '10' })[0]).toMatch(/^invalid_field: Workflow holdout.percent: /);
    expect(problems({})[0]).toMatch(/^invalid_field: Workflow holdout.percent: /);
    expect(problems({ percent: 10, share: 3 })[0]).toMatch(/^invalid_field: Workflow holdout: /);
  });
});
