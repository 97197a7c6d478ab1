// Two versions of a workflow compared step by step, in the canvas's words: which steps were added or
// removed, and for a changed step which of its fields changed and how ("If 1 condition", "Wait for", …);
// then the journey's own parts: its entry step, who enters on an event, its goal and when it stops.
import type { Step, WorkflowDefinition } from '../../core/model/workflow';

export type StepChange = { step: string; change: 'added' | 'removed' | 'changed'; details: string[] };

const capitalize = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);

/** A step's kind as the palette names it: a direct step without a next step is an Exit. */
const kindOf = (step: Step) => (step.kind === 'direct' && !step.next ? 'Exit' : capitalize(step.kind));

/** The name of the journey-wide entry in the list of changes. */
export const JOURNEY = 'The journey';

/** A step as "field in words" → shown value, so two versions of it compare field by field. */
function fieldsOf(step: Step): Map<string, string> {
  const fields = new Map<string, string>([['Kind', kindOf(step)]]);
  const put = (name: string, value: unknown) => value !== undefined && fields.set(name, typeof value === 'string' ? value : JSON.stringify(value));
  put('On enter', step.enterAction);
  put('On leave', step.leaveAction);
  put('Re-evaluate when idle (ttl)', step.ttl);
  switch (step.kind) {
    case 'branch':
      step.branches.forEach((b, i) => {
        const name = b.condition === 'true' ? 'Else' : `If ${i + 1}`;
        put(`${name} condition`, b.condition);
        put(`${name} goes to`, b.next);
      });
      break;
    case 'split':
      step.paths.forEach((p, i) => {
        put(`Path ${i + 1} share`, `${p.percent}%`);
        put(`Path ${i + 1} goes to`, p.next);
      });
      break;
    case 'timer':
      put('Cron', step.cron);
      put('Time zone', step.tz);
      put('Time zone from profile', step.tzFromProfile);
      put('Condition', step.condition);
      put('Next step', step.next);
      break;
    case 'delay':
      put('Wait for', step.after);
      put('Next step', step.next);
      break;
    case 'parallel':
      put('Actions', step.actions.join(', '));
      put('Next step', step.next);
      break;
    default:
      if (step.next) put('Next step', step.next);
  }
  return fields;
}

export function compareVersions(older: WorkflowDefinition, newer: WorkflowDefinition): StepChange[] {
  const before = new Map(older.steps.map((s) => [s.name, s]));
  const after = new Map(newer.steps.map((s) => [s.name, s]));
  const changes: StepChange[] = [];
  for (const step of newer.steps) {
    const old = before.get(step.name);
    if (!old) {
      changes.push({ step: step.name, change: 'added', details: [`${kindOf(step)} step`] });
      continue;
    }
    const details = differences(fieldsOf(old), fieldsOf(step));
    if (details.length) changes.push({ step: step.name, change: 'changed', details });
  }
  for (const step of older.steps) if (!after.has(step.name)) changes.push({ step: step.name, change: 'removed', details: [`${kindOf(step)} step`] });
  const journey = journeyChanges(older, newer);
  if (journey.length) changes.unshift({ step: JOURNEY, change: 'changed', details: journey });
  return changes;
}

/** The journey's own parts as "part in words" → shown value. */
function journeyFields(definition: WorkflowDefinition): Map<string, string> {
  const fields = new Map<string, string>();
  const put = (name: string, value: string | undefined) => value !== undefined && fields.set(name, value);
  put('Entry step', definition.steps[0]?.name);
  put('Users also enter on the event', definition.entry?.event);
  put('Entry condition', definition.entry?.condition);
  put('Entry only for the crowd', definition.entry?.crowd);
  put('Entering again', definition.entry ? (definition.entry.reentry === 'again' ? 'after an exit step' : 'once') : undefined);
  put('Goal', definition.goal?.condition);
  put('Exit when', definition.exit?.condition);
  put(
    'Held out',
    definition.holdout?.percent ? `${definition.holdout.percent}%${definition.holdout.seed ? ` (seed ${definition.holdout.seed})` : ''}` : undefined,
  );
  put('Stops at', definition.stopAt);
  return fields;
}

const journeyChanges = (older: WorkflowDefinition, newer: WorkflowDefinition) => differences(journeyFields(older), journeyFields(newer));

/** "Field: was → now", "Field: now (new)", "Field: was (removed)" for each field whose value differs. */
function differences(a: Map<string, string>, b: Map<string, string>): string[] {
  return [...new Set([...a.keys(), ...b.keys()])].flatMap((field) => {
    const [was, now] = [a.get(field), b.get(field)];
    if (was === now) return [];
    if (was === undefined) return [`${field}: ${now} (new)`];
    if (now === undefined) return [`${field}: ${was} (removed)`];
    return [`${field}: ${was} → ${now}`];
  });
}
