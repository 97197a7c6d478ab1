'use client';
import { useEffect, useId, useMemo, useRef, useState } from 'react';
import {
  prepareRuleGroup,
  QueryBuilder,
  type Controls,
  type FieldSelectorProps,
  type FullField,
  type Operator,
  type RuleGroupType,
  type RuleType,
  type ValueEditorProps,
  type ValueSelectorProps,
} from 'react-querybuilder';
import 'react-querybuilder/dist/query-builder.css';
import { celSyntaxProblem } from '../../core/conditions/parse';
import { celToQuery, EMPTY_QUERY, FIELD_SUGGESTIONS, IN_CROWD, queryToCel, unfinishedRule } from '../rules';
import { formatCount } from '../ui';
import { AudienceEstimate } from './audience';
import { useCanvasInfo } from './context';
import { EMPTY_CATALOG, useFieldCatalog, type FieldCatalog, type Suggestion } from './fields';

// A condition is edited either in the visual rule builder (which writes CEL) or as raw CEL. The
// builder opens whenever the text can be shown in it without loss; raw CEL shows live parse errors.

const FIELDS = FIELD_SUGGESTIONS.map((f) => ({ name: f.name, label: f.label }));

const OPERATORS: Operator[] = [
  { name: '=', label: '=' },
  { name: '!=', label: '≠' },
  { name: '<', label: '<' },
  { name: '<=', label: '≤' },
  { name: '>', label: '>' },
  { name: '>=', label: '≥' },
  { name: 'contains', label: 'contains' },
  { name: 'beginsWith', label: 'begins with' },
  { name: 'endsWith', label: 'ends with' },
  { name: 'in', label: 'in (a,b,…)' },
  { name: 'notIn', label: 'not in (a,b,…)' },
];

const CROWD_OPERATORS: Operator[] = [
  { name: '=', label: 'is in' },
  { name: '!=', label: 'is not in' },
];

/** What the builder's controls get as context: the choosers' lists, and a prefix that keeps their ids apart per condition. */
type BuilderContext = FieldCatalog & { listPrefix: string };

/** A datalist id unique on the page (several conditions are shown at once, each with rules at the same paths). */
const datalistId = (context: unknown, path: number[], what: string) =>
  `${(context as BuilderContext | undefined)?.listPrefix ?? 'cel'}-${what}-${path.join('-')}`;

/** Fields are open-ended (`event.data.<any>`, `profile.<any>`): a text box offering what exists, never a trap. */
function FieldInput({ value, handleOnChange, path, disabled, context }: FieldSelectorProps) {
  const catalog = (context as FieldCatalog | undefined) ?? EMPTY_CATALOG;
  const listId = datalistId(context, path, 'fields');
  return (
    <span className="rule-field">
      <input
        aria-label="Field"
        list={listId}
        value={value ?? ''}
        disabled={disabled}
        onChange={(e) => handleOnChange(e.target.value)}
        data-testid="rule-field"
        placeholder="profile.plan"
      />
      <datalist id={listId}>
        {FIELD_SUGGESTIONS.map((f) => (
          <option key={f.name} value={f.name}>
            {f.label}
          </option>
        ))}
        {catalog.profileFields.map((f) => (
          <option key={f.path} value={`profile.${f.path}`}>
            {[`Profile: ${f.path}`, f.type, f.users === undefined ? '' : `${formatCount(f.users)} users`].filter(Boolean).join(' · ')}
          </option>
        ))}
      </datalist>
    </span>
  );
}

/** The value box suggests crowd names for "In crowd", event types for `event.type`, top values for a known profile field. */
function ValueInput({ field, value, handleOnChange, path, disabled, context }: ValueEditorProps) {
  const catalog = (context as FieldCatalog | undefined) ?? EMPTY_CATALOG;
  const suggestions: Suggestion[] =
    field === IN_CROWD
      ? catalog.crowds.map((value) => ({ value }))
      : field === 'event.type'
        ? catalog.eventTypes
        : (catalog.profileFields.find((f) => `profile.${f.path}` === field)?.topValues ?? []);
  const listId = datalistId(context, path, 'values');
  return (
    <>
      <input
        className="rule-value"
        aria-label={field === IN_CROWD ? 'Crowd' : 'Value'}
        placeholder={field === IN_CROWD ? 'crowd name' : 'value'}
        list={suggestions.length ? listId : undefined}
        value={Array.isArray(value) ? value.join(', ') : String(value ?? '')}
        disabled={disabled}
        onChange={(e) => handleOnChange(e.target.value)}
        data-testid="rule-value"
      />
      {suggestions.length > 0 && (
        <datalist id={listId}>
          {suggestions.map((s) => (
            <option key={s.value} value={s.value}>
              {s.label}
            </option>
          ))}
        </datalist>
      )}
    </>
  );
}

/** RQB's selects carry only a title; this one is labelled for screen readers too (axe: label-title-only). */
function LabelledSelect({ options, value, handleOnChange, className, title, disabled, testID }: ValueSelectorProps) {
  const flat = (options as { name: string; label: string }[]).filter((o) => 'name' in o);
  return (
    <select
      aria-label={title}
      title={title}
      className={className}
      value={value ?? ''}
      disabled={disabled}
      onChange={(e) => handleOnChange(e.target.value)}
      data-testid={testID}
    >
      {flat.map((o) => (
        <option key={o.name} value={o.name}>
          {o.label}
        </option>
      ))}
    </select>
  );
}

const CONTROLS: Partial<Controls<FullField, string>> = {
  fieldSelector: FieldInput,
  valueEditor: ValueInput,
  combinatorSelector: LabelledSelect,
  operatorSelector: LabelledSelect,
};

const operatorsOf = (field: string) => (field === IN_CROWD ? CROWD_OPERATORS : OPERATORS);

/**
 * The rule tree of a CEL text, with ids. The builder keys each rule by its id and gives a tree without ids fresh
 * ones on every render: the rules of a condition read from its text were remounted under the marketer's cursor,
 * dropping the focus after each keystroke (and a Backspace then reached the canvas).
 */
function readCel(text: string) {
  const parsed = celToQuery(text);
  return parsed.ok ? { ...parsed, query: prepareRuleGroup(parsed.query) } : parsed;
}

/** Rules of a tree, depth first (groups flattened). */
function rulesOf(group: RuleGroupType): RuleType[] {
  return group.rules.flatMap((rule) => ('rules' in rule ? rulesOf(rule) : typeof rule === 'string' ? [] : [rule]));
}

export function ConditionEditor({
  value,
  onChange,
  label,
  optional = false,
  whenEmpty = 'true',
}: {
  value: string | undefined;
  onChange: (text: string | undefined) => void;
  label: string;
  optional?: boolean;
  /** What an empty optional condition means, shown under the rules (a timer's "only users where": everyone, `true`). */
  whenEmpty?: string;
}) {
  const { tenant, workflowId } = useCanvasInfo();
  const catalog = useFieldCatalog(tenant);
  const listPrefix = useId();
  const context: BuilderContext = { ...catalog, listPrefix };
  const text = value ?? '';
  const parsed = useMemo(() => readCel(text), [text]);
  // The mode is the marketer's choice; only a text the builder cannot show (typed as CEL, or undone to) moves it to CEL.
  const [mode, setMode] = useState<'builder' | 'raw'>(parsed.ok ? 'builder' : 'raw');
  // the builder's own tree, so half-written rules survive while the marketer types
  const [query, setQuery] = useState<RuleGroupType>(() => (parsed.ok ? parsed.query : prepareRuleGroup(EMPTY_QUERY)));
  // the text changed from outside (undo, raw CEL, another step): re-read it into the builder
  const [emitted, setEmitted] = useState(text);
  if (text !== emitted) {
    setEmitted(text);
    if (parsed.ok) setQuery(parsed.query);
    else if (mode === 'builder') setMode('raw');
  }
  // react-querybuilder's root is a role="form" landmark it gives no name: name it, or an inspector with several
  // conditions has landmarks a screen reader cannot tell apart (axe landmark-unique)
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => box.current?.querySelector('[role=form]')?.setAttribute('aria-label', `${label} rules`));
  const unfinished = mode === 'builder' ? rulesOf(query).map(unfinishedRule).find(Boolean) : null;
  const problem = unfinished ?? (text.trim() ? celSyntaxProblem(text) : optional ? null : 'A condition cannot be empty');

  function fromBuilder(next: RuleGroupType) {
    setQuery(next);
    const cel = queryToCel(next);
    const value = optional && cel === 'true' ? undefined : cel;
    setEmitted(value ?? '');
    // the builder also reports trees that say the same thing (ids added, an empty rule); not an edit
    if ((value ?? '') !== text) onChange(value);
  }

  function switchTo(target: 'raw' | 'builder') {
    if (target === 'builder') {
      if (!parsed.ok) return;
      setQuery(parsed.query);
    }
    setMode(target);
  }

  return (
    <div ref={box} className="condition" data-testid="condition-editor" data-mode={mode}>
      <div className="row spread">
        <span className="condition-label">{label}</span>
        <div className="segmented" role="tablist" aria-label={`${label}: edit as`}>
          <button
            type="button"
            role="tab"
            aria-selected={mode === 'builder'}
            className={mode === 'builder' ? 'on' : ''}
            disabled={!parsed.ok}
            title={parsed.ok ? '' : parsed.reason}
            onClick={() => switchTo('builder')}
          >
            Rules
          </button>
          <button type="button" role="tab" aria-selected={mode === 'raw'} className={mode === 'raw' ? 'on' : ''} onClick={() => switchTo('raw')}>
            CEL
          </button>
        </div>
      </div>
      {mode === 'builder' ? (
        <>
          <QueryBuilder
            fields={FIELDS}
            operators={OPERATORS}
            query={query}
            onQueryChange={fromBuilder}
            getOperators={operatorsOf}
            controlElements={CONTROLS}
            controlClassnames={{ queryBuilder: 'queryBuilder-branches' }}
            context={context}
            resetOnFieldChange={false}
            enableMountQueryChange={false}
          />
          <code className="cel-preview" data-testid="cel-preview">
            {text || whenEmpty}
          </code>
        </>
      ) : (
        <>
          <textarea
            aria-label={`${label} (CEL)`}
            rows={3}
            value={text}
            spellCheck={false}
            onChange={(e) => onChange(optional && !e.target.value.trim() ? undefined : e.target.value)}
            data-testid="cel-input"
          />
          {!parsed.ok && !parsed.syntax && text.trim() && <p className="muted small">{parsed.reason}</p>}
        </>
      )}
      {problem && (
        <p className="field-error" role="alert" data-testid="cel-error">
          {problem}
        </p>
      )}
      <AudienceEstimate tenant={tenant} workflowId={workflowId} condition={problem || !text.trim() || text.trim() === 'true' ? null : text} />
    </div>
  );
}
