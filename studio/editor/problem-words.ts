// validateWorkflow()'s messages in the words of the editor a marketer sees. The validator (one, shared with the
// server) speaks the API's language: field paths of the request (`timeout.after`, `entry.event`, `branches[0].condition`)
// and zod's generic wording ("Too small: expected string to have >=1 characters"). Here a path becomes the name of the
// box that holds the value, and zod's wording what is wrong with it, so no message shows a path or a schema term.
import type { WorkflowProblem } from '../../core/model/workflow';
import { outputHandles, type StepNode } from '../convert';

const capitalize = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);

/** A step's fields by the words of the inspector. */
const STEP_FIELDS: Record<string, string> = {
  name: 'Name',
  kind: 'Kind',
  enterAction: 'On enter action',
  leaveAction: 'On leave action',
  ttl: 'Re-evaluate when idle (ttl)',
  after: 'Wait for',
  cron: 'Cron',
  tz: 'Time zone',
  tzFromProfile: 'Zone attribute',
  condition: 'Condition',
  actions: 'Actions',
  next: 'Next step',
  seed: 'Seed',
  branches: 'Branches',
  paths: 'Paths',
  timeout: 'Timeout',
  'timeout.after': 'Timeout',
  'timeout.next': 'Timeout',
};

/** The journey's own fields (edited with no step selected) by the words of the side panel. */
const WORKFLOW_FIELDS: Record<string, string> = {
  entry: 'Entry',
  'entry.event': 'Entry event type',
  'entry.condition': 'Entry “Only when” condition',
  'entry.crowd': 'Entry crowd',
  'entry.reentry': 'Entry “A user may enter”',
  goal: 'Goal',
  'goal.condition': 'Goal “Converted when” condition',
  stopAt: 'Stop time',
  steps: 'Steps',
  definition: 'Journey',
};

/** `branches[1].condition` → `If 2 condition`, `paths[0].next` → `Path 1 (50%)`, `after` → `Wait for`; null for no field. */
export function fieldWords(node: StepNode | undefined, field: string): string | null {
  const indexed = /^(branches|paths|actions)\[(\d+)\](?:\.(\w+))?$/.exec(field);
  if (indexed) {
    const index = Number(indexed[2]);
    if (indexed[1] === 'actions') return `Action ${index + 1}`;
    const label = node ? outputHandles(node)[index]?.label : undefined;
    const name = indexed[1] === 'branches' ? (label === 'else' ? 'Else' : `If ${index + 1}`) : `Path ${index + 1}${label ? ` (${label})` : ''}`;
    const rest = indexed[3];
    if (rest === 'condition') return `${name} condition`;
    if (rest === 'percent') return `Path ${index + 1} share`;
    return name;
  }
  return STEP_FIELDS[field] ?? null;
}

/** zod's generic messages, said of the field they follow ("Timeout is empty"). */
const ZOD_WORDS: [RegExp, (...groups: string[]) => string][] = [
  [/^Too small: expected string to have >=1 characters?$/, () => 'is empty'],
  [/^Too small: expected string to have >=(\d+) characters$/, (n) => `needs at least ${n} characters`],
  [/^Too big: expected string to have <=(\d+) characters$/, (n) => `is longer than ${n} characters`],
  [/^Too small: expected number to be >=(-?[\d.]+)$/, (n) => `must be ${n} or more`],
  [/^Too big: expected number to be <=(-?[\d.]+)$/, (n) => `must be ${n} or less`],
  [/^Too small: expected array to have >=(\d+) items?$/, (n) => `needs at least ${n}`],
  [/^Invalid input: expected (\w+), received undefined$/, () => 'is missing'],
  [/^Invalid input: expected number, received NaN$/, () => 'must be a number'],
  [/^Invalid input: expected (\w+), received (\w+)$/, (want) => `must be ${want === 'string' ? 'text' : `a ${want}`}`],
  [/^Invalid option: expected one of (.+)$/, (options) => `must be one of ${options.replaceAll('"', '').replaceAll('|', ', ')}`],
  [/^Invalid ISO datetime$/, () => 'is not a time with a zone, e.g. 2026-12-31T23:00:00Z'],
  [/^A condition cannot be empty$/, () => 'is empty'],
];

/** What to write instead, for the few fields where "is empty" alone leaves the marketer guessing. */
const EMPTY_HINTS: Record<string, string> = {
  'Entry event type': 'write the event type that lets users in, e.g. signup',
  Timeout: 'write how long to wait, e.g. 2d',
  'Wait for': 'write how long to wait, e.g. 2d',
  Cron: 'write when it fires, e.g. 0 0 9 * * *',
  'Re-evaluate when idle (ttl)': 'write how long, e.g. 1d, or leave it out',
};

function zodWords(message: string): string | null {
  for (const [pattern, say] of ZOD_WORDS) {
    const match = pattern.exec(message);
    if (match) return say(...match.slice(1));
  }
  return null;
}

/** "<field>: <message>" or "<field> <rest>", with the field in words; a duration left empty is said so. */
function sayField(words: string, rest: string): string {
  if (rest.startsWith(': ')) {
    const message = rest.slice(2);
    const said = zodWords(message);
    if (said === null) return `${words}: ${message}`;
    return said === 'is empty' && EMPTY_HINTS[words] ? `${words} is empty: ${EMPTY_HINTS[words]}` : `${words} ${said}`;
  }
  // an empty box quoted back (`cron "" has 0 fields`, `after "" is not a duration`) is an empty box
  if (rest.startsWith(' "" ')) return `${words} is empty: ${EMPTY_HINTS[words] ?? 'write how long, e.g. 2d'}`;
  return `${words}${rest.replace(/^ is not a valid condition: /, ' is not valid: ')}`;
}

const FIELD_PATH = /^([A-Za-z]\w*(?:\[\d+\])?(?:\.\w+)*)(?=[: ]|$)/;

/** The message in the editor's words, without the step's name where the place it is shown already names the step. */
export function problemText(problem: WorkflowProblem, node: StepNode | undefined): string {
  let text = problem.message;
  if (problem.step !== null) {
    const prefix = `Step "${problem.step}"`;
    if (text.startsWith(`${prefix}: `)) text = text.slice(prefix.length + 2);
    else if (text.startsWith(`${prefix} `)) text = text.slice(prefix.length + 1);
    const field = FIELD_PATH.exec(text)?.[1];
    const words = field === undefined ? null : fieldWords(node, field);
    // a step name's own message already says "Step name is …"
    if (field === 'name' && text.startsWith('name: Step name')) return text.slice('name: '.length);
    if (field !== undefined && words !== null) text = sayField(words, text.slice(field.length));
    return capitalize(text);
  }
  if (!text.startsWith('Workflow ')) return capitalize(text);
  text = text.slice('Workflow '.length);
  const field = FIELD_PATH.exec(text)?.[1];
  const words = field === undefined ? undefined : WORKFLOW_FIELDS[field];
  return field !== undefined && words !== undefined ? capitalize(sayField(words, text.slice(field.length))) : `The journey ${text}`;
}
