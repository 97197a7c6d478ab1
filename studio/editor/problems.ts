// The problems of the drawn workflow, in the canvas's words. They come from the same validateWorkflow()
// the server runs on save, run on every edit, then told the way the canvas shows things: "If 1" rather
// than `branches[0]`, "Wait for" rather than `after`, and without the step name inside the step itself.
import { validateWorkflow } from '../../server/model/validate';
import type { WorkflowProblem } from '../../server/model/workflow';
import { canvasProblems, graphToDefinition, outputHandles, type FlowEdge, type StepNode, type WorkflowExtras } from '../convert';

export type CanvasProblem = WorkflowProblem & {
  /** The node the problem belongs to (null: the whole workflow, or a step name no node has). */
  nodeId: string | null;
  /** The message without the leading `Step "name"`, for places that already show the step. */
  text: string;
};

const FIELD_WORDS: Record<string, string> = {
  after: 'Wait for',
  ttl: 'Re-evaluate when idle (ttl)',
  cron: 'Cron',
  tz: 'Time zone',
  tzFromProfile: 'Zone attribute',
  condition: 'Condition',
  actions: 'Actions',
  name: 'Name',
  next: 'Next step',
};

const capitalize = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);

/** `branches[1].condition` → `If 2 condition`, `paths[0].next` → `Path 1 (50%)`, `after` → `Wait for`. */
export function fieldWords(node: StepNode | undefined, field: string): string {
  const indexed = /^(branches|paths)\[(\d+)\](?:\.(\w+))?/.exec(field);
  if (indexed) {
    const index = Number(indexed[2]);
    const label = node ? outputHandles(node)[index]?.label : undefined;
    const name = indexed[1] === 'branches' ? (label === 'else' ? 'Else' : `If ${index + 1}`) : `Path ${index + 1}${label ? ` (${label})` : ''}`;
    const rest = indexed[3];
    return rest === 'condition' ? `${name} condition` : rest === 'next' ? name : `${name}${rest ? ` ${rest}` : ''}`;
  }
  return FIELD_WORDS[field] ?? field;
}

/** The message body in canvas words: technical field paths replaced, the step prefix dropped. */
export function problemText(problem: WorkflowProblem, node: StepNode | undefined): string {
  let text = problem.message;
  if (problem.step !== null) {
    const prefix = `Step "${problem.step}"`;
    if (text.startsWith(`${prefix}: `)) text = text.slice(prefix.length + 2);
    else if (text.startsWith(`${prefix} `)) text = text.slice(prefix.length + 1);
  }
  text = text.replace(/^((?:branches|paths)\[\d+\](?:\.\w+)?|after|ttl|cron|tzFromProfile|tz)\b/, (field) => fieldWords(node, field));
  text = text.replace(/ is not a valid condition: /, ' is not valid: ');
  return capitalize(text);
}

export function describeProblems(nodes: StepNode[], problems: WorkflowProblem[]): CanvasProblem[] {
  const byName = new Map(nodes.map((n) => [n.data.name, n]));
  return problems.map((problem) => {
    const node = problem.step === null ? undefined : byName.get(problem.step);
    return { ...problem, nodeId: node?.id ?? null, text: problemText(problem, node) };
  });
}

/** Validates what the canvas shows, as a save would. */
export function validateCanvas(nodes: StepNode[], edges: FlowEdge[], stopAt: string | undefined, now: number, extras: WorkflowExtras = {}): CanvasProblem[] {
  const { definition } = graphToDefinition(nodes, edges, stopAt, extras);
  const result = validateWorkflow(definition, { now });
  return describeProblems(nodes, result.ok ? [] : canvasProblems(nodes, edges, result.problems));
}
