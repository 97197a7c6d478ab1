'use client';
import type { Counts } from '../model';
import { formatCount, formatShare } from '../ui';
import { useCounts } from './context';
import { LiftStrip } from './holdout';
import { useEditor } from './store';

// What the workflow's goal achieved, read from the counts the canvas shows (live or a history snapshot, which carry
// `converted` and `convertedFrom` exactly when the version has a goal): for the journey, converted users out of those
// who entered; for a step, users who converted while in it out of those who reached it.

export type GoalFigure = { converted: number; of: number; rate: string };

/** Users who reached a step: those who entered the instance (the entry step) plus every move into it. */
function reached(counts: Counts, step: string, isEntry: boolean): number {
  // step names cannot hold "->" (core/model/names.ts), so an edge key splits in two
  let moves = 0;
  for (const [edge, n] of Object.entries(counts.edges)) {
    const [from, to] = edge.split('->');
    if (to === step && from !== step) moves += n;
  }
  return (isEntry ? counts.entered : 0) + moves;
}

/** The goal's result for a step, or for the whole journey when `step` is null; null when the version has no goal. */
export function goalFigure(counts: Counts | undefined, step: string | null, entryStep: string | undefined): GoalFigure | null {
  if (counts?.converted === undefined) return null;
  const converted = step === null ? counts.converted : (counts.convertedFrom?.[step] ?? 0);
  const of = step === null ? counts.entered : reached(counts, step, step === entryStep);
  return { converted, of, rate: formatShare(converted, Math.max(of, converted)) || '0%' };
}

function useGoalFigure(step: string | null): GoalFigure | null {
  const counts = useCounts();
  const entryStep = useEditor((s) => s.nodes[0]?.data.name);
  return goalFigure(counts, step, entryStep);
}

/**
 * On a step, beside its count: how many users reached the goal from it, once any did. Short ("★ 2 · 20%", the words in
 * its title) so it keeps to the count's line: a step growing taller as users convert would push its edges' labels
 * onto the steps below.
 */
export function StepConverted({ step }: { step: string }) {
  const figure = useGoalFigure(step);
  if (!figure || figure.converted === 0) return null;
  const words = `${formatCount(figure.converted)} converted: ${figure.rate} of the ${formatCount(figure.of)} users who reached this step`;
  return (
    <span className="step-converted" data-testid="step-converted" data-converted={figure.converted} title={words} role="img" aria-label={words}>
      ★ {formatCount(figure.converted)} · {figure.rate}
    </span>
  );
}

/** The journey's result, on a strip across the top of the canvas: over the graph, it hid a step once fitted to a narrow window. */
export function GoalResultBar() {
  const figure = useGoalFigure(null);
  if (!figure) return null;
  return (
    <div className="goal-result" data-testid="goal-result">
      <strong>★ Goal</strong> {formatCount(figure.converted)} converted · {figure.rate} <span className="muted">of {formatCount(figure.of)} entered</span>
      <LiftStrip />
    </div>
  );
}

/** The side panel's account of the goal: the journey's figure and each step users converted from, most first. */
export function GoalSummary() {
  const counts = useCounts();
  const entryStep = useEditor((s) => s.nodes[0]?.data.name);
  const journey = goalFigure(counts, null, entryStep);
  if (!counts || !journey) return null;
  const steps = Object.entries(counts.convertedFrom ?? {})
    .filter(([, n]) => n > 0)
    .sort(([, a], [, b]) => b - a)
    .map(([step]) => [step, goalFigure(counts, step, entryStep)!] as const);
  return (
    <div className="goal-summary" data-testid="goal-summary">
      <p>
        <strong>{formatCount(journey.converted)}</strong> of the {formatCount(journey.of)} users who entered reached the goal ({journey.rate}).
      </p>
      {steps.length > 0 && (
        <table className="goal-steps">
          <thead>
            <tr>
              <th scope="col">Converted from</th>
              <th scope="col">Users</th>
              <th scope="col">Of those who got there</th>
            </tr>
          </thead>
          <tbody>
            {steps.map(([step, figure]) => (
              <tr key={step} data-testid="goal-step">
                <td>{step}</td>
                <td>{formatCount(figure.converted)}</td>
                <td>
                  {figure.rate} of {formatCount(figure.of)}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}

/** The inspector's line for the selected step. */
export function StepGoalLine({ step }: { step: string }) {
  const figure = useGoalFigure(step);
  if (!figure) return null;
  return (
    <p className="step-goal" data-testid="step-goal">
      ★ Goal: {formatCount(figure.converted)} of the {formatCount(figure.of)} users who reached this step converted from it ({figure.rate}).
    </p>
  );
}
