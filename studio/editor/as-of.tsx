'use client';
import { createContext, useContext, useId, useRef, useState, type FormEvent, type KeyboardEvent } from 'react';
import { apiGet, tenantPath } from '../api';
import type { Counts } from '../model';
import { useQuery } from '../query';
import { ErrorBox } from '../ui';
import { useCanvasInfo } from './context';

// "As of": a running journey's counts at a past moment (GET …/counts?asOf=, issue 38 §2) in place of the live ones,
// picked on a strip across the canvas. While a moment is shown the canvas is marked as the past, and the step menu's
// exports ask for the users at the step then; "Back to live" (or Escape in the strip) returns to the live counts.

/** The moment shown (an RFC 3339 time), or null for the live counts; kept by the editor. */
export const AsOfContext = createContext<{ asOf: string | null; setAsOf: (asOf: string | null) => void }>({ asOf: null, setAsOf: () => {} });

export const useAsOf = () => useContext(AsOfContext);

/** The query key of the counts at `asOf`, read by useCounts while the moment is shown. */
export const asOfCountsKey = (tenant: string, instanceId: string, asOf: string) => `counts-as-of:${tenant}:${instanceId}:${asOf}`;

/** Fetches the counts at `asOf` into the query cache (once: a past moment's counts do not change). */
export function useAsOfCounts(tenant: string, instanceId: string | null, asOf: string | null) {
  return useQuery<Counts>(instanceId && asOf ? asOfCountsKey(tenant, instanceId, asOf) : null, () =>
    apiGet(tenantPath(tenant, `/instances/${instanceId}/counts?asOf=${encodeURIComponent(asOf!)}`)),
  );
}

/** The `asOf=` query parameter of an export while a past moment is shown ('' when live). */
export function asOfParameter(asOf: string | null): string {
  return asOf ? `&asOf=${encodeURIComponent(asOf)}` : '';
}

/** A moment in the reader's words, to the second: "5 Dec 2026, 09:30:00". */
export function momentInWords(iso: string): string {
  return new Date(iso).toLocaleString(undefined, { day: 'numeric', month: 'short', year: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit' });
}

/** The strip: live or past, a date-time picker (local time, to the second) and the way back to live. */
export function AsOfStrip() {
  const { tenant, instanceId, live } = useCanvasInfo();
  const { asOf, setAsOf } = useAsOf();
  const counts = useAsOfCounts(tenant, instanceId, asOf);
  const [picked, setPicked] = useState('');
  const [problem, setProblem] = useState<string | null>(null);
  const picker = useRef<HTMLInputElement>(null);
  const pickerId = useId();
  if (!live || !instanceId) return null;

  function show(event: FormEvent) {
    event.preventDefault();
    // A date-time without a zone is the reader's local time (ECMAScript's rule for Date.parse of that form).
    const ms = Date.parse(picked);
    if (Number.isNaN(ms)) return setProblem('Pick a date and a time first.');
    setProblem(null);
    setAsOf(new Date(ms).toISOString());
  }
  function backToLive() {
    setAsOf(null);
    setProblem(null);
    picker.current?.focus();
  }
  function escapeToLive(event: KeyboardEvent) {
    if (event.key !== 'Escape' || !asOf) return;
    event.stopPropagation();
    backToLive();
  }

  return (
    <form className={`as-of-strip${asOf ? ' past' : ''}`} onSubmit={show} onKeyDown={escapeToLive} data-testid="as-of">
      <span role="status" data-testid="as-of-status">
        {asOf ? (
          <>
            <strong>Past</strong> · counts as of {momentInWords(asOf)}
            {counts.loading && !counts.data ? ' (rebuilding…)' : ''}
          </>
        ) : (
          <>
            <strong className="live-dot">●</strong> Live counts
          </>
        )}
      </span>
      <label htmlFor={pickerId}>As of</label>
      <input ref={picker} id={pickerId} type="datetime-local" step={1} value={picked} onChange={(event) => setPicked(event.target.value)} />
      <button type="submit" disabled={picked === ''}>
        Show
      </button>
      {asOf && (
        <button type="button" className="primary" onClick={backToLive} data-testid="as-of-live">
          Back to live
        </button>
      )}
      {problem && <span className="field-error">{problem}</span>}
      {asOf && counts.error && <ErrorBox error={counts.error} />}
    </form>
  );
}
