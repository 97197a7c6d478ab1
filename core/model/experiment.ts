// Experiments that pick a winner (issue 37 §5): a split step compared on the journey's goal. The engine counts, per
// path, the users who took it and those of them who converted (bitmaps: server/engine/shard.ts); this file turns
// those figures into what a marketer decides on, and says when an experiment decides by itself. Pure: the studio
// computes the same table from live counts as the API reports.
//
// - Each path's conversion rate has a 95% Wilson score interval (it stays inside [0, 1] and keeps its coverage at
//   small counts and rates near 0, where the normal "p ± 1.96·SE" interval does not).
// - The probability each path is best: with a uniform prior each path's rate has the posterior Beta(1 + converted,
//   1 + not converted); P(path i best) = ∫ f_i(x) · Π_{j≠i} F_j(x) dx, integrated numerically (trapezoids on a grid
//   that gives every path 1,200 points over its posterior mean ± 12 standard deviations, so a 10M-user path's narrow
//   posterior is resolved as well as a 100-user one's). Deterministic: the same counts give the same answer.
import type { Experiment, Step, WorkflowDefinition, WorkflowProblem } from './workflow';
import { MIN_OUTCOMES, Z_95 } from './lift';

/** Probability of being best at which an experiment with `autoWinner.significance` decides. */
export const WIN_PROBABILITY = 0.95;
/** Users each path needs before an experiment decides by significance (besides MIN_OUTCOMES of each outcome). */
export const MIN_PATH_USERS = 100;

/** What the engine counts per path of an experiment: users who took it, and those of them who reached the goal. */
export type PathFigures = { path: string; entered: number; converted: number };
/** An experiment's figures as the engine reports them in the counts; `winner`: the path everyone is sent to, once decided. */
export type ExperimentFigures = { paths: PathFigures[]; winner: string | null };

export type PathResult = PathFigures & {
  /** converted / entered; null while nobody took the path. */
  rate: number | null;
  /** 95% Wilson score interval of the rate; null while nobody took the path. */
  interval: { low: number; high: number } | null;
  /** The posterior probability that this path's rate is the highest (the paths' add up to 1). */
  probabilityBest: number;
};

export type ExperimentResult = {
  paths: PathResult[];
  /** The path most likely best (the first of equals); null without paths. */
  leader: string | null;
  /** Every path has MIN_PATH_USERS users, MIN_OUTCOMES who converted and as many who did not. */
  enoughData: boolean;
  /** enoughData and the leader is best with probability ≥ WIN_PROBABILITY. */
  significant: boolean;
  winner: string | null;
};

/** The 95% Wilson score interval of `converted` out of `users`; null for no users. */
export function wilsonInterval(converted: number, users: number): { low: number; high: number } | null {
  if (users <= 0) return null;
  const p = converted / users;
  const z2 = Z_95 * Z_95;
  const denominator = 1 + z2 / users;
  const centre = (p + z2 / (2 * users)) / denominator;
  const half = (Z_95 / denominator) * Math.sqrt((p * (1 - p)) / users + z2 / (4 * users * users));
  return { low: Math.max(0, centre - half), high: Math.min(1, centre + half) };
}

/** Grid points each path's posterior contributes, and how many of its standard deviations they span either side. */
const POINTS_PER_PATH = 1200;
const SPAN_SD = 12;

/** P(each path's rate is the highest) under Beta(1 + converted, 1 + users − converted) posteriors (see the header). */
export function probabilityBest(groups: readonly { entered: number; converted: number }[]): number[] {
  if (groups.length === 0) return [];
  if (groups.length === 1) return [1];
  const shapes = groups.map(({ entered, converted }) => ({ a: 1 + converted, b: 1 + Math.max(0, entered - converted) }));
  const xs = grid(shapes);
  const densities = shapes.map(({ a, b }) => density(xs, a, b));
  const cdfs = densities.map((f) => cumulative(xs, f));
  const raw = densities.map((f, i) => {
    const integrand = xs.map((_, t) => {
      let product = f[t];
      for (let j = 0; j < cdfs.length; j++) if (j !== i) product *= cdfs[j][t];
      return product;
    });
    return trapezoid(xs, integrand);
  });
  const total = raw.reduce((sum, p) => sum + p, 0);
  return raw.map((p) => (total > 0 ? p / total : 1 / groups.length));
}

/** Points in [0, 1]: each posterior's mean ± SPAN_SD standard deviations, POINTS_PER_PATH apart, merged and sorted. */
function grid(shapes: { a: number; b: number }[]): number[] {
  const points = [0, 1];
  for (const { a, b } of shapes) {
    const n = a + b;
    const mean = a / n;
    const sd = Math.sqrt((a * b) / (n * n * (n + 1)));
    const low = Math.max(0, mean - SPAN_SD * sd);
    const high = Math.min(1, mean + SPAN_SD * sd);
    for (let i = 0; i <= POINTS_PER_PATH; i++) points.push(low + ((high - low) * i) / POINTS_PER_PATH);
  }
  points.sort((x, y) => x - y);
  return points.filter((x, i) => i === 0 || x > points[i - 1]);
}

/** Beta(a, b)'s density at each point, normalised numerically on the grid (no log-gamma needed: a, b ≥ 1). */
function density(xs: number[], a: number, b: number): number[] {
  const logs = xs.map((x) => (a > 1 ? (a - 1) * Math.log(x) : 0) + (b > 1 ? (b - 1) * Math.log1p(-x) : 0));
  const top = Math.max(...logs);
  const values = logs.map((l) => Math.exp(l - top));
  const area = trapezoid(xs, values);
  return values.map((v) => v / area);
}

function cumulative(xs: number[], f: number[]): number[] {
  const out = new Array<number>(xs.length).fill(0);
  for (let t = 1; t < xs.length; t++) out[t] = out[t - 1] + ((f[t] + f[t - 1]) / 2) * (xs[t] - xs[t - 1]);
  return out;
}

function trapezoid(xs: number[], f: number[]): number {
  let sum = 0;
  for (let t = 1; t < xs.length; t++) sum += ((f[t] + f[t - 1]) / 2) * (xs[t] - xs[t - 1]);
  return sum;
}

/** What a marketer reads of an experiment's figures: rates, intervals, the probability each path is best. */
export function experimentResult(figures: ExperimentFigures): ExperimentResult {
  const best = probabilityBest(figures.paths);
  const paths = figures.paths.map((path, i) => ({
    ...path,
    rate: path.entered > 0 ? path.converted / path.entered : null,
    interval: wilsonInterval(path.converted, path.entered),
    probabilityBest: best[i],
  }));
  let leader: PathResult | null = null;
  for (const path of paths) if (!leader || path.probabilityBest > leader.probabilityBest) leader = path;
  const enoughData =
    paths.length > 0 && paths.every((p) => p.entered >= MIN_PATH_USERS && p.converted >= MIN_OUTCOMES && p.entered - p.converted >= MIN_OUTCOMES);
  return {
    paths,
    leader: leader?.path ?? null,
    enoughData,
    significant: enoughData && (leader?.probabilityBest ?? 0) >= WIN_PROBABILITY,
    winner: figures.winner,
  };
}

/**
 * Whether an experiment decides by itself now, and for which path: by significance as soon as it is reached, at its
 * date whatever the data (the leader then). Null while undecided, or once a winner was set.
 */
export function autoWinner(experiment: Experiment, result: ExperimentResult, now: number): { path: string; by: 'date' | 'significance' } | null {
  const auto = experiment.autoWinner;
  if (!auto || experiment.winner || !result.leader) return null;
  if (auto.significance && result.significant) return { path: result.leader, by: 'significance' };
  if (auto.after !== undefined && now >= Date.parse(auto.after)) return { path: result.leader, by: 'date' };
  return null;
}

export type SplitStepOf = Extract<Step, { kind: 'split' }>;

/**
 * The definition that sends the rest of a split's users to `path`: that path takes 100%, the others 0%, and the
 * experiment records the winner (its automatic rule is spent). Everything else is kept as it is.
 */
export function withWinner(
  definition: WorkflowDefinition,
  stepName: string,
  winner: { path: string; at: string; by: 'manual' | 'date' | 'significance' },
): WorkflowDefinition {
  return {
    ...definition,
    steps: definition.steps.map((step) =>
      step.name === stepName && step.kind === 'split'
        ? { ...step, paths: step.paths.map((p) => ({ ...p, percent: p.next === winner.path ? 100 : 0 })), experiment: { winner } }
        : step,
    ),
  };
}

/** Problems of the experiments of a definition (validateWorkflow()): each names its step. Shapes are zod's. */
export function experimentProblems(definition: Record<string, unknown>): WorkflowProblem[] {
  const steps = Array.isArray(definition.steps) ? definition.steps : [];
  const problems: WorkflowProblem[] = [];
  for (const raw of steps) {
    if (!isRecord(raw) || raw.kind !== 'split' || !isRecord(raw.experiment) || typeof raw.name !== 'string') continue;
    const name = raw.name;
    const add = (message: string) => problems.push({ step: name, code: 'bad_experiment', message: `Step "${name}" ${message}` });
    const paths = (Array.isArray(raw.paths) ? raw.paths : []).filter(isRecord);
    const nexts = paths.map((p) => (typeof p.next === 'string' ? p.next : ''));
    if (definition.goal === undefined)
      add(
        'is an experiment, which compares its paths on the journey\'s goal, and this workflow has no goal: add a goal (e.g. event.type == "purchase") or remove the experiment',
      );
    const twice = nexts.find((next, i) => next && nexts.indexOf(next) !== i);
    if (twice) add(`is an experiment whose paths lead to "${twice}" twice: each path must lead to its own step, which names it in the results`);
    const { autoWinner: auto, winner } = raw.experiment;
    if (isRecord(auto) && auto.after === undefined && auto.significance !== true)
      add('experiment.autoWinner says neither when nor how to decide: give after (a date) or significance: true, or leave autoWinner out');
    if (isRecord(winner) && typeof winner.path === 'string') {
      const at = nexts.indexOf(winner.path);
      if (at < 0) add(`experiment.winner "${winner.path}" is not one of its paths (they lead to ${nexts.map((n) => `"${n}"`).join(', ')})`);
      else if (paths[at].percent !== 100) add(`experiment.winner "${winner.path}" takes every user: its path's percent must be 100 and the others' 0`);
    }
  }
  return problems;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
