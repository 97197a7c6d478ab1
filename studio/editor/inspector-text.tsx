'use client';

/** A labelled text field of the inspector; `hint` explains the value or says what is wrong with it. */
export function Text({
  label,
  value,
  onChange,
  placeholder,
  testId,
  hint,
  list,
}: {
  label: string;
  value: string | undefined;
  onChange: (v: string | undefined) => void;
  placeholder?: string;
  testId?: string;
  hint?: { ok: boolean; text: string } | null;
  /** The id of a datalist of suggested values. */
  list?: string;
}) {
  return (
    <label>
      {label}
      <input
        value={value ?? ''}
        placeholder={placeholder}
        onChange={(e) => onChange(e.target.value === '' ? undefined : e.target.value)}
        data-testid={testId}
        aria-invalid={hint ? !hint.ok : undefined}
        list={list}
      />
      {hint && (
        <span className={hint.ok ? 'muted small' : 'field-error'} data-testid={testId ? `${testId}-hint` : undefined}>
          {hint.text}
        </span>
      )}
    </label>
  );
}
