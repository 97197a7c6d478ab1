'use client';
import { useEffect, useState } from 'react';
import { MAX_HOLDOUT_PERCENT } from '../../core/model/holdout';
import { liftOf, MIN_OUTCOMES, type Lift } from '../../core/model/lift';
import { formatCount } from '../ui';
import { useCounts } from './context';
import { useEditor, useEditorStore } from './store';

// The journey's holdout (issue 37 §4): the share of entering users kept as a control group (no webhooks), edited in
// the side panel, and what it measured, read from the counts the canvas shows with the API's own liftOf().

/** A share as points with a sign: 0.0312 → "+3.1 pts". */
function points(share: number): string {
  const value = Math.round(share * 1000) / 10;
  return `${value > 0 ? '+' : value < 0 ? '−' : '±'}${Math.abs(value)} pts`;
}

const percent = (rate: number | null) => (rate === null ? '–' : `${Math.round(rate * 1000) / 10}%`);

/** "+3.1 pts (+33%) over the holdout": the lift in one phrase; null until both groups have users. */
export function liftWords(lift: Lift): string | null {
  if (lift.absolute === null) return null;
  const relative = lift.relative === null ? '' : ` (${lift.relative >= 0 ? '+' : '−'}${Math.round(Math.abs(lift.relative) * 100)}%)`;
  return `${points(lift.absolute)}${relative} over the holdout`;
}

function useLift(): Lift | null {
  const counts = useCounts();
  return counts ? liftOf(counts) : null;
}

/** The percent box: kept as typed ("2." stays while typing 2.5), sent to the store once it reads as a number. */
function HoldoutPercent({ readOnly }: { readOnly: boolean }) {
  const store = useEditorStore();
  const holdout = useEditor((s) => s.extras.holdout);
  const [text, setText] = useState(holdout ? String(holdout.percent) : '');
  // An undo, a restore or a draft put another value in the store: show it.
  const stored = holdout?.percent;
  useEffect(
    () => setText((typed) => ((typed.trim() === '' ? stored === undefined : Number(typed) === stored) ? typed : stored === undefined ? '' : String(stored))),
    [stored],
  );
  const number = text.trim() === '' ? null : Number(text);
  return (
    <label>
      Hold out (% of entering users)
      <input
        value={text}
        inputMode="decimal"
        placeholder={`0 to ${MAX_HOLDOUT_PERCENT}, e.g. 10`}
        aria-invalid={number !== null && Number.isNaN(number)}
        onChange={(e) => {
          const typed = e.target.value;
          setText(typed);
          if (readOnly) return;
          const value = typed.trim() === '' ? null : Number(typed);
          if (value === null) store.setExtras({ holdout: undefined });
          else if (!Number.isNaN(value)) store.setExtras({ holdout: { ...holdout, percent: value } });
        }}
        data-testid="holdout-percent-input"
      />
      {number !== null && Number.isNaN(number) && <span className="field-error">Write a number, e.g. 10</span>}
    </label>
  );
}

/** The side panel's holdout: the share, what it means, and (with a goal and a running or past instance) the measured lift. */
export function HoldoutPanel({ readOnly }: { readOnly: boolean }) {
  const goal = useEditor((s) => s.extras.goal);
  const held = useEditor((s) => s.extras.holdout?.percent ?? 0);
  const lift = useLift();
  return (
    <>
      <h3>Holdout</h3>
      <HoldoutPercent readOnly={readOnly} />
      {held > 0 && (
        <p className="muted small" data-testid="holdout-help">
          {held}% of entering users go through the journey without its webhooks, as a control group.
          {goal ? ' The goal is counted for both groups.' : ' Add a goal to measure the lift.'}
        </p>
      )}
      {lift && <LiftTable lift={lift} />}
    </>
  );
}

function LiftTable({ lift }: { lift: Lift }) {
  const words = liftWords(lift);
  return (
    <div className="holdout-lift" data-testid="holdout-lift">
      <table className="goal-steps">
        <thead>
          <tr>
            <th scope="col">Group</th>
            <th scope="col">Users</th>
            <th scope="col">Converted</th>
          </tr>
        </thead>
        <tbody>
          {(
            [
              ['Treated', lift.treatment],
              ['Held out', lift.holdout],
            ] as const
          ).map(([name, group]) => (
            <tr key={name} data-testid="holdout-group">
              <td>{name}</td>
              <td>{formatCount(group.users)}</td>
              <td>
                {formatCount(group.converted)} · {percent(group.rate)}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {words ? (
        <p data-testid="holdout-lift-words">
          <strong>Lift {words}</strong>
          {lift.interval && (
            <>
              {' '}
              · 95% confidence: {points(lift.interval.low)} to {points(lift.interval.high)}
            </>
          )}
          <br />
          <span className="muted small" data-testid="holdout-verdict">
            {verdict(lift)}
          </span>
        </p>
      ) : (
        <p className="muted small">The lift shows once both groups have users.</p>
      )}
    </div>
  );
}

/** Whether the lift can be trusted yet, in words. */
function verdict(lift: Lift): string {
  if (!lift.enoughData) {
    const fewest = Math.min(lift.treatment.converted, lift.holdout.converted);
    return fewest < MIN_OUTCOMES
      ? `Too few conversions to judge yet: each group needs ${MIN_OUTCOMES} (the ${lift.holdout.converted <= lift.treatment.converted ? 'holdout' : 'treated group'} has ${fewest}).`
      : `Too few users to judge yet: each group needs ${MIN_OUTCOMES} who did not convert.`;
  }
  const p = lift.pValue === null ? '' : lift.pValue < 0.001 ? ' (p < 0.001)' : ` (p = ${lift.pValue.toPrecision(2)})`;
  return lift.significant ? `Significant at 95%${p}.` : `Not significant yet${p}: the difference may still be chance.`;
}

/** On the goal strip atop the canvas: the lift in a few words ("Lift +3.1 pts (+33%) over the holdout"). */
export function LiftStrip() {
  const lift = useLift();
  const words = lift && liftWords(lift);
  if (!words) return null;
  return (
    <span
      className="lift-strip"
      data-testid="lift-strip"
      title={lift.interval ? `95% confidence: ${points(lift.interval.low)} to ${points(lift.interval.high)}` : undefined}
    >
      {' '}
      · Lift {words}
      {lift.significant ? ' (significant)' : lift.enoughData ? ' (not significant yet)' : ' (too early to judge)'}
    </span>
  );
}
