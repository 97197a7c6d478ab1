'use client';
import { useMemo, useState } from 'react';
import { QueryBuilder, type FieldSelectorProps, type Operator, type RuleGroupType } from 'react-querybuilder';
import 'react-querybuilder/dist/query-builder.css';
import { celSyntaxProblem } from '../../server/conditions/parse';
import { celToQuery, EMPTY_QUERY, FIELD_SUGGESTIONS, IN_CROWD, queryToCel } from '../rules';

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

/** Fields are open-ended (`event.data.<any>`, `profile.<any>`): a text box with suggestions. */
function FieldInput({ value, handleOnChange, path, disabled }: FieldSelectorProps) {
  const listId = `cel-fields-${path.join('-')}`;
  return (
    <span className="rule-field">
      <input aria-label="Field" list={listId} value={value ?? ''} disabled={disabled} onChange={(e) => handleOnChange(e.target.value)} data-testid="rule-field" />
      <datalist id={listId}>
        {FIELD_SUGGESTIONS.map((f) => (
          <option key={f.name} value={f.name}>
            {f.label}
          </option>
        ))}
      </datalist>
    </span>
  );
}

export function ConditionEditor({ value, onChange, label, optional = false }: { value: string | undefined; onChange: (text: string | undefined) => void; label: string; optional?: boolean }) {
  const text = value ?? '';
  const parsed = useMemo(() => celToQuery(text), [text]);
  const [raw, setRaw] = useState(!parsed.ok);
  // the builder's own tree, so half-written rules (empty value) survive while the CEL text stays valid
  const [query, setQuery] = useState<RuleGroupType>(parsed.ok ? parsed.query : EMPTY_QUERY);
  // the text changed from outside (undo, raw CEL): re-read it into the builder
  const [emitted, setEmitted] = useState(text);
  if (text !== emitted) {
    setEmitted(text);
    if (parsed.ok) setQuery(parsed.query);
  }
  const syntax = text.trim() ? celSyntaxProblem(text) : optional ? null : 'A condition cannot be empty';
  const mode = raw || !parsed.ok ? 'raw' : 'builder';

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
    setRaw(target === 'raw');
  }

  return (
    <div className="condition" data-testid="condition-editor">
      <div className="row spread">
        <span className="condition-label">{label}</span>
        <div className="segmented" role="tablist">
          <button type="button" role="tab" aria-selected={mode === 'builder'} className={mode === 'builder' ? 'on' : ''} disabled={!parsed.ok} title={parsed.ok ? '' : parsed.reason} onClick={() => switchTo('builder')}>
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
            getOperators={(field) => (field === IN_CROWD ? CROWD_OPERATORS : OPERATORS)}
            controlElements={{ fieldSelector: FieldInput }}
            controlClassnames={{ queryBuilder: 'queryBuilder-branches' }}
            resetOnFieldChange={false}
            enableMountQueryChange={false}
          />
          <code className="cel-preview" data-testid="cel-preview">
            {text || 'true'}
          </code>
        </>
      ) : (
        <>
          <textarea aria-label={`${label} (CEL)`} rows={3} value={text} spellCheck={false} onChange={(e) => onChange(optional && !e.target.value.trim() ? undefined : e.target.value)} data-testid="cel-input" />
          {!parsed.ok && !parsed.syntax && text.trim() && <p className="muted small">{parsed.reason}</p>}
        </>
      )}
      {syntax && (
        <p className="field-error" role="alert" data-testid="cel-error">
          {syntax}
        </p>
      )}
    </div>
  );
}
