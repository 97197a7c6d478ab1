// The problems of the drawn workflow, in the canvas's words. They come from the same validateWorkflow()
// the server runs on save, run on every edit, then told the way the canvas shows things (problem-words.ts): "If 1"
// rather than `branches[0]`, "Entry event type is empty" rather than zod's words, without the step name inside the step.
import { validateWorkflow } from '../../core/model/validate';
import type { WorkflowProblem } from '../../core/model/workflow';
import { canvasProblems, graphToDefinition, type FlowEdge, type StepNode, type WorkflowExtras } from '../convert';
import { problemText } from './problem-words';

export type CanvasProblem = WorkflowProblem & {
  /** The node the problem belongs to (null: the whole workflow, or a step name no node has). */
  nodeId: string | null;
  /** The message without the leading `Step "name"`, for places that already show the step. */
  text: string;
};

export function describeProblems(nodes: StepNode[], problems: WorkflowProblem[]): CanvasProblem[] {
  const byName = new Map(nodes.map((n) => [n.data.name, n]));
  const said = new Set<string>();
  return problems.flatMap((problem) => {
    const node = problem.step === null ? undefined : byName.get(problem.step);
    const text = problemText(problem, node);
    // two messages of the validator about one box (an empty cron: no text, no fields) read the same in words: say it once
    const key = `${problem.step}\u0000${text}`;
    if (said.has(key)) return [];
    said.add(key);
    return [{ ...problem, nodeId: node?.id ?? null, text }];
  });
}

/** Validates what the canvas shows, as a save would. */
export function validateCanvas(nodes: StepNode[], edges: FlowEdge[], stopAt: string | undefined, now: number, extras: WorkflowExtras = {}): CanvasProblem[] {
  const { definition } = graphToDefinition(nodes, edges, stopAt, extras);
  const result = validateWorkflow(definition, { now });
  return describeProblems(nodes, result.ok ? [] : canvasProblems(nodes, edges, result.problems));
}
