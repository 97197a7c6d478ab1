// The statistics of experiments (core/model/experiment.ts) against values computed here another way, from seeded
// data: each user's path and conversion drawn at random and counted by plain loops; the Wilson interval as the roots
// of its quadratic; the probability of being best for two paths by Evan Miller's closed form (a finite sum of Beta
// functions, with a log-gamma of our own), for three paths by a seeded Monte Carlo of 200,000 posterior draws, and
// for ten-million-user paths by the normal approximation. Then the winner rules, the re-weighting and validation.
import { describe, expect, it } from 'vitest';
import { autoWinner, experimentResult, probabilityBest, wilsonInterval, withWinner } from '../../core/model/experiment';
import { validateWorkflow } from '../../core/model/validate';
import type { WorkflowDefinition } from '../../core/model/workflow';
import { seededRandom } from '../helpers/seeded-random';

const Z = 1.959963984540054;

/** The Wilson interval as the two p with |p̂ − p| = z·sqrt(p(1 − p)/n): roots of (1 + z²/n)p² − (2p̂ + z²/n)p + p̂² = 0. */
function wilsonRoots(x: number, n: number): [number, number] {
  const p = x / n;
  const a = 1 + (Z * Z) / n;
  const b = -(2 * p + (Z * Z) / n);
  const c = p * p;
  const root = Math.sqrt(b * b - 4 * a * c);
  return [(-b - root) / (2 * a), (-b + root) / (2 * a)];
}

/** ln Γ(x) by Stirling's series with the recurrence up to x ≥ 10 (error below 1e-12 there). */
function logGamma(x: number): number {
  let shift = 0;
  while (x < 10) shift -= Math.log(x++);
  const inv = 1 / (x * x);
  return shift + (x - 0.5) * Math.log(x) - x + 0.5 * Math.log(2 * Math.PI) + (1 / (12 * x)) * (1 - inv * (1 / 30 - inv * (1 / 105 - inv / 140)));
}
const logBeta = (a: number, b: number) => logGamma(a) + logGamma(b) - logGamma(a + b);

/** P(rate B > rate A) for Beta(aA, bA) and Beta(aB, bB) with whole aB: Evan Miller's closed form. */
function probabilityBBeatsA(aA: number, bA: number, aB: number, bB: number): number {
  let total = 0;
  for (let i = 0; i < aB; i++) total += Math.exp(logBeta(aA + i, bA + bB) - Math.log(bB + i) - logBeta(1 + i, bB) - logBeta(aA, bA));
  return total;
}

/** A Gamma(shape, 1) draw (Marsaglia and Tsang), from a seeded source. */
function gamma(shape: number, random: () => number): number {
  const normal = () => Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
  const d = shape - 1 / 3;
  const c = 1 / Math.sqrt(9 * d);
  for (;;) {
    let x: number;
    let v: number;
    do {
      x = normal();
      v = 1 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const u = 1 - random();
    if (Math.log(u) < 0.5 * x * x + d - d * v + d * Math.log(v)) return d * v;
  }
}

/** Paths' users and conversions drawn user by user from seeded randomness: a user's path by share, then conversion by the path's rate. */
function drawUsers(seed: number, users: number, shares: number[], rates: number[]) {
  const random = seededRandom(seed);
  const paths = shares.map((_, i) => ({ path: `p${i}`, entered: 0, converted: 0 }));
  for (let u = 0; u < users; u++) {
    let point = random();
    let i = 0;
    while (i < shares.length - 1 && point >= shares[i]) point -= shares[i++];
    paths[i].entered++;
    if (random() < rates[i]) paths[i].converted++;
  }
  return paths;
}

describe('experiment statistics', () => {
  it('gives each path its rate and the Wilson interval (the roots of its quadratic)', () => {
    const paths = drawUsers(7, 3_000, [0.5, 0.3, 0.2], [0.1, 0.13, 0.02]);
    const result = experimentResult({ paths, winner: null });
    for (const [i, path] of result.paths.entries()) {
      expect(path.rate).toBe(paths[i].converted / paths[i].entered);
      const [low, high] = wilsonRoots(paths[i].converted, paths[i].entered);
      expect(path.interval!.low).toBeCloseTo(low, 12);
      expect(path.interval!.high).toBeCloseTo(high, 12);
    }
    // At the edges it stays inside [0, 1] and is not empty, unlike p ± 1.96·SE.
    expect(wilsonInterval(0, 50)!.low).toBe(0);
    expect(wilsonInterval(0, 50)!.high).toBeCloseTo(wilsonRoots(0, 50)[1], 12);
    expect(wilsonInterval(50, 50)!.high).toBe(1);
    expect(wilsonInterval(0, 0)).toBeNull();
  });

  it('gives two paths the probability of being best that the closed form gives', () => {
    for (const seed of [1, 2, 3, 4]) {
      const [a, b] = drawUsers(seed, 400 + seed * 150, [0.5, 0.5], [0.08, 0.1]);
      const exact = probabilityBBeatsA(1 + a.converted, 1 + a.entered - a.converted, 1 + b.converted, 1 + b.entered - b.converted);
      const [pa, pb] = probabilityBest([a, b]);
      expect(pb).toBeCloseTo(exact, 4);
      expect(pa + pb).toBeCloseTo(1, 12);
    }
    // No data: a coin toss; the same data twice: equal.
    expect(
      probabilityBest([
        { entered: 0, converted: 0 },
        { entered: 0, converted: 0 },
      ])[0],
    ).toBeCloseTo(0.5, 6);
    const same = probabilityBest([
      { entered: 500, converted: 40 },
      { entered: 500, converted: 40 },
      { entered: 500, converted: 40 },
    ]);
    for (const p of same) expect(p).toBeCloseTo(1 / 3, 6);
  });

  it('gives three paths the probabilities a seeded Monte Carlo of the posteriors finds', () => {
    const paths = drawUsers(21, 2_400, [0.34, 0.33, 0.33], [0.1, 0.115, 0.105]);
    const random = seededRandom(99);
    const wins = [0, 0, 0];
    const draws = 200_000;
    for (let d = 0; d < draws; d++) {
      let best = 0;
      let bestRate = -1;
      for (const [i, { entered, converted }] of paths.entries()) {
        const x = gamma(1 + converted, random);
        const rate = x / (x + gamma(1 + entered - converted, random));
        if (rate > bestRate) [best, bestRate] = [i, rate];
      }
      wins[best]++;
    }
    const computed = probabilityBest(paths);
    // 200,000 draws: a standard error below 0.0012 per share.
    for (const [i, p] of computed.entries()) expect(Math.abs(p - wins[i] / draws)).toBeLessThan(0.005);
  });

  it('resolves ten-million-user paths as the normal approximation does', () => {
    const a = { entered: 10_000_000, converted: 1_000_000 };
    const b = { entered: 10_000_000, converted: 1_001_200 };
    const variance = (g: typeof a) => ((g.converted / g.entered) * (1 - g.converted / g.entered)) / g.entered;
    const z = (b.converted / b.entered - a.converted / a.entered) / Math.sqrt(variance(a) + variance(b));
    // Φ(z) by Simpson's rule.
    const n = 20_000;
    const h = z / n;
    const phi = (x: number) => Math.exp((-x * x) / 2) / Math.sqrt(2 * Math.PI);
    let sum = phi(0) + phi(z);
    for (let i = 1; i < n; i++) sum += (i % 2 ? 4 : 2) * phi(i * h);
    expect(probabilityBest([a, b])[1]).toBeCloseTo(0.5 + (h / 3) * sum, 3);
  });

  it('decides by significance once there is enough data, and at its date whatever the data', () => {
    const figures = (converted: number[], entered = 1_000) => ({ paths: converted.map((c, i) => ({ path: `p${i}`, entered, converted: c })), winner: null });
    const clear = experimentResult(figures([100, 140]));
    expect(clear.leader).toBe('p1');
    expect(clear.enoughData).toBe(true);
    expect(clear.significant).toBe(true);
    const close = experimentResult(figures([100, 104]));
    expect(close.significant).toBe(false);
    // 99 users a path is not enough, however clear the difference.
    const small = experimentResult(figures([5, 40], 99));
    expect(small.paths[1].probabilityBest).toBeGreaterThan(0.99);
    expect(small.enoughData).toBe(false);

    const at = Date.parse('2026-03-01T09:00:00Z');
    expect(autoWinner({ autoWinner: { significance: true } }, clear, 0)).toEqual({ path: 'p1', by: 'significance' });
    expect(autoWinner({ autoWinner: { significance: true } }, close, at)).toBeNull();
    expect(autoWinner({ autoWinner: { after: '2026-03-01T09:00:00Z' } }, close, at - 1)).toBeNull();
    expect(autoWinner({ autoWinner: { after: '2026-03-01T09:00:00Z' } }, close, at)).toEqual({ path: 'p1', by: 'date' });
    expect(autoWinner({ autoWinner: { after: '2026-03-01T09:00:00Z' } }, clear, at)).toEqual({ path: 'p1', by: 'date' });
    expect(autoWinner({}, clear, at)).toBeNull();
    const winner = { path: 'p1', at: '2026-02-01T00:00:00Z', by: 'manual' as const };
    expect(autoWinner({ autoWinner: { significance: true }, winner }, clear, at)).toBeNull();
  });
});

describe('experiment definitions', () => {
  const journey = (experiment: unknown, goal = true, nexts = ['a', 'b']) => ({
    steps: [
      { name: 'ab', kind: 'split', paths: nexts.map((next, i) => ({ percent: i === 0 ? 50 : 50 / (nexts.length - 1), next })), experiment },
      { name: 'a', kind: 'direct' },
      { name: 'b', kind: 'direct' },
    ],
    ...(goal ? { goal: { condition: 'event.type == "buy"' } } : {}),
  });
  const problems = (definition: unknown) => {
    const result = validateWorkflow(definition, { now: 0 });
    return result.ok ? [] : result.problems.map((p) => `${p.code}: ${p.message}`);
  };

  it('are validated by validateWorkflow(), each problem naming its step', () => {
    expect(problems(journey({}))).toEqual([]);
    expect(problems(journey({ autoWinner: { after: '2026-03-01T09:00:00Z', significance: true } }))).toEqual([]);
    expect(problems(journey({}, false))).toEqual([
      'bad_experiment: Step "ab" is an experiment, which compares its paths on the journey\'s goal, and this workflow has no goal: add a goal (e.g. event.type == "purchase") or remove the experiment',
    ]);
    expect(problems(journey({}, true, ['a', 'a', 'b']))).toEqual([
      'bad_experiment: Step "ab" is an experiment whose paths lead to "a" twice: each path must lead to its own step, which names it in the results',
    ]);
    expect(problems(journey({ autoWinner: {} }))).toEqual([
      'bad_experiment: Step "ab" experiment.autoWinner says neither when nor how to decide: give after (a date) or significance: true, or leave autoWinner out',
    ]);
    expect(problems(journey({ autoWinner: { after: 'tomorrow' } }))[0]).toMatch(/^invalid_field: Step "ab".*after/);
    expect(problems(journey({ winner: { path: 'c', at: '2026-03-01T09:00:00Z', by: 'manual' } }))).toEqual([
      'bad_experiment: Step "ab" experiment.winner "c" is not one of its paths (they lead to "a", "b")',
    ]);
    expect(problems(journey({ winner: { path: 'b', at: '2026-03-01T09:00:00Z', by: 'manual' } }))).toEqual([
      'bad_experiment: Step "ab" experiment.winner "b" takes every user: its path\'s percent must be 100 and the others\' 0',
    ]);
  });

  it('send the rest to the winner: its path takes 100%, the winner is recorded, the rest of the journey is kept', () => {
    const definition = validateWorkflow(journey({ autoWinner: { significance: true } }));
    expect(definition.ok).toBe(true);
    const winner = { path: 'b', at: '2026-03-01T09:00:00Z', by: 'significance' as const };
    const next = withWinner((definition as { definition: WorkflowDefinition }).definition, 'ab', winner);
    expect(next.steps[0]).toMatchObject({
      paths: [
        { percent: 0, next: 'a' },
        { percent: 100, next: 'b' },
      ],
      experiment: { winner },
    });
    expect(next.steps.slice(1)).toEqual((definition as { definition: WorkflowDefinition }).definition.steps.slice(1));
    expect(next.goal).toEqual({ condition: 'event.type == "buy"' });
    expect(problems(next)).toEqual([]);
  });
});
