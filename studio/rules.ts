// Rule builder ↔ CEL. The visual builder (react-querybuilder) edits a query tree; the workflow stores CEL.
// queryToCel() writes CEL; celToQuery() reads CEL back into a tree and refuses (so the editor switches to
// raw CEL) whenever the tree would not say exactly what the text says: the round trip is checked by
// comparing the CEL syntax trees of the text and of the regenerated text, so nothing is silently dropped.
import { parse } from '@marcbachmann/cel-js';
import { defaultRuleProcessorCEL, formatQuery } from 'react-querybuilder/formatQuery';
import { parseCEL } from 'react-querybuilder/parseCEL';
import type { RuleGroupType, RuleProcessor, RuleType } from 'react-querybuilder';

/** The pseudo-field for crowd membership: `{field: 'inCrowd', operator: '=', value: 'vip'}` ⇔ `inCrowd("vip")`. */
export const IN_CROWD = 'inCrowd';

export const EMPTY_QUERY: RuleGroupType = { combinator: 'and', rules: [] };

/** Field suggestions for the builder; any `event.data.<x>` or `profile.<x>` can be typed as well. */
export const FIELD_SUGGESTIONS = [
  { name: 'event.type', label: 'Event type' },
  { name: 'event.data.', label: 'Event data field…' },
  { name: 'profile.', label: 'Profile attribute…' },
  { name: 'user', label: 'User ID' },
  { name: IN_CROWD, label: 'In crowd' },
] as const;

const NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?$/;

/** A value typed as digits is a number in CEL (`amount > 100`); anything else is a string. */
function typedValue(value: unknown): unknown {
  return typeof value === 'string' && NUMBER.test(value.trim()) ? Number(value.trim()) : value;
}

const LIST_OPERATORS = new Set(['in', 'notIn']);

const ruleProcessor: RuleProcessor = (rule, options) => {
  if (rule.field === IN_CROWD) {
    const call = `${IN_CROWD}(${JSON.stringify(String(rule.value ?? ''))})`;
    return rule.operator === '!=' ? `!${call}` : call;
  }
  if (LIST_OPERATORS.has(rule.operator)) {
    // written here rather than by the default processor, which quotes every list item as a string
    const items = (Array.isArray(rule.value) ? rule.value : String(rule.value ?? '').split(','))
      .map((item: unknown) => (typeof item === 'string' ? item.trim() : item))
      .filter((item: unknown) => item !== '')
      .map((item: unknown) => JSON.stringify(typedValue(item)));
    const membership = `${rule.field} in [${items.join(', ')}]`;
    return rule.operator === 'notIn' ? `!(${membership})` : membership;
  }
  return defaultRuleProcessorCEL({ ...rule, value: typedValue(rule.value) }, options);
};

/** CEL for a query tree; an empty tree is `true` (always). */
export function queryToCel(query: RuleGroupType): string {
  const text = formatQuery(query, { format: 'cel', ruleProcessor });
  return text === '1 == 1' || text.trim() === '' ? 'true' : text;
}

export type CelToQuery = { ok: true; query: RuleGroupType } | { ok: false; reason: string; syntax: boolean };

/**
 * The rule tree for a CEL text. Only the syntax decides: a rule the builder itself wrote while the marketer
 * is still typing (`p == ""`, an unknown variable) reads back as that rule, so the builder never gives way
 * to raw CEL in the middle of a word. Whether the condition is valid is the validator's question.
 */
export function celToQuery(text: string): CelToQuery {
  const trimmed = text.trim();
  if (trimmed === '' || trimmed === 'true') return { ok: true, query: EMPTY_QUERY };
  try {
    parse(trimmed);
  } catch (error) {
    return { ok: false, reason: (error as Error).message.split('\n')[0], syntax: true };
  }
  let query: RuleGroupType;
  try {
    query = parseCEL(trimmed, {
      customExpressionHandler: (expression) => {
        const call = expression as { type: string; name?: { value?: string }; args?: { value?: { type: string; value: string }[] } };
        const arg = call.args?.value?.[0];
        if (call.type !== 'FunctionCall' || call.name?.value !== IN_CROWD || call.args?.value?.length !== 1 || arg?.type !== 'StringLiteral') return null;
        return { field: IN_CROWD, operator: '=', value: JSON.parse(`"${arg.value.slice(1, -1)}"`) } satisfies RuleType;
      },
    });
  } catch (error) {
    return { ok: false, reason: (error as Error).message, syntax: false };
  }
  if (!sameCel(trimmed, queryToCel(query))) {
    return { ok: false, reason: 'This condition uses CEL the rule builder cannot show; edit it as CEL.', syntax: false };
  }
  return { ok: true, query };
}

/** Two CEL texts mean the same when their syntax trees match (positions and formatting aside). */
export function sameCel(left: string, right: string): boolean {
  try {
    return canonical(left) === canonical(right);
  } catch {
    return false;
  }
}

function canonical(text: string): string {
  const strip = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(strip);
    if (typeof node === 'bigint') return `${node}n`;
    if (node && typeof node === 'object') {
      const { op, args } = node as { op: unknown; args: unknown };
      return { op, args: strip(args) };
    }
    return node;
  };
  return JSON.stringify(strip(parse(text).ast));
}

const FIELD_ROOTS = /^(event\.type|event\.data\.[A-Za-z_][\w.]*|profile\.[A-Za-z_][\w.]*|user|now|inCrowd)$/;

/** What is still missing from a rule being written, in the builder's words; null when the rule is complete. */
export function unfinishedRule(rule: RuleType): string | null {
  const field = String(rule.field ?? '').trim();
  if (!field) return 'Pick a field for the rule';
  if (field === IN_CROWD) return String(rule.value ?? '').trim() ? null : 'Pick the crowd for “In crowd”';
  if (/^(profile|event\.data)\.$/.test(field)) return `Finish the field name: ${field}<name>`;
  if (!FIELD_ROOTS.test(field)) return `“${field}” is not a field yet: fields start with profile., event.data., event.type, user or inCrowd`;
  return null;
}

const OPERATOR_WORDS: Record<string, string> = {
  '=': '=',
  '!=': '≠',
  '<': '<',
  '<=': '≤',
  '>': '>',
  '>=': '≥',
  contains: 'contains',
  beginsWith: 'starts with',
  endsWith: 'ends with',
  in: 'in',
  notIn: 'not in',
};

const listItems = (value: unknown): string[] => (Array.isArray(value) ? value.map(String) : String(value ?? '').split(',')).map((item) => item.trim());
const listText = (value: unknown) => listItems(value).join(', ');

/** One rule as a marketer reads it: `plan = pro`, `amount ≥ 100`, `in vip`; an event type alone names the event. */
function ruleSummary(rule: RuleType): string {
  const operator = OPERATOR_WORDS[rule.operator] ?? rule.operator;
  if (rule.field === IN_CROWD) return `${rule.operator === '!=' ? 'not in' : 'in'} ${listText(rule.value)}`;
  if (rule.field === 'event.type') {
    if (rule.operator === '=') return listText(rule.value);
    if (rule.operator === 'in') return listItems(rule.value).join(' or ');
    return `event ${operator} ${listText(rule.value)}`;
  }
  const field = String(rule.field).replace(/^(profile|event\.data)\./, '');
  return `${field} ${operator} ${listText(rule.value)}`;
}

function groupSummary(group: RuleGroupType, nested: boolean): string {
  const text = group.rules
    .map((rule) => (typeof rule === 'string' ? rule : 'rules' in rule ? groupSummary(rule, true) : ruleSummary(rule)))
    .filter((part) => part !== 'and' && part !== 'or')
    .join(` ${group.combinator} `);
  if (group.not) return group.rules.length > 1 ? `not (${text})` : `not ${text}`;
  return nested && group.rules.length > 1 ? `(${text})` : text;
}

/**
 * A condition in a few words for the canvas (`plan = pro`, `open and plan = pro`), from the rule tree the builder
 * shows; CEL the builder cannot show is given as written. `true` is "else" (a branch that always holds).
 */
export function conditionSummary(text: string): string {
  const trimmed = text.trim();
  if (trimmed === 'true') return 'else';
  const read = celToQuery(trimmed);
  return read.ok && read.query.rules.length > 0 ? groupSummary(read.query, false) : trimmed;
}

/** Shortens a text for a label of limited room, cutting at a word where one is near the limit. */
export function truncate(text: string, max: number): string {
  if (text.length <= max) return text;
  const cut = text.slice(0, max - 1);
  const space = cut.lastIndexOf(' ');
  return `${(space > max * 0.6 ? cut.slice(0, space) : cut).trimEnd()}…`;
}
