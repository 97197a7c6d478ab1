'use client';
import { formatCount } from '../ui';
import { ConditionEditor } from './condition';
import { useCounts } from './context';
import { useEditor, useEditorStore } from './store';

// The journey's exit criteria (docs/journeys.md "Exit criteria"): edited in the workflow panel (nothing selected), and
// on a running journey the users who met them, per step, read from the counts the canvas shows (live or a history
// snapshot, which carry `exited` and `exitedFrom` exactly when the version has exit criteria).

/** Users who exited early from `step` (or the journey when null); null when the version has no exit criteria. */
function useExited(step: string | null): number | null {
  const counts = useCounts();
  if (counts?.exited === undefined) return null;
  return step === null ? counts.exited : (counts.exitedFrom?.[step] ?? 0);
}

/** The workflow panel's "Exit when" field, and how many users left by it on a running journey. */
export function ExitPanel({ readOnly }: { readOnly: boolean }) {
  const store = useEditorStore();
  const exit = useEditor((s) => s.extras.exit);
  const exited = useExited(null);
  return (
    <>
      <h3>Exit</h3>
      <ConditionEditor
        label="Exit when"
        optional
        whenEmpty="nobody exits early (no exit criteria)"
        value={exit?.condition}
        onChange={(text) => !readOnly && store.setExtras({ exit: text ? { condition: text } : undefined })}
      />
      <p className="muted small">
        A user who meets it leaves the journey from the step they are in, without the actions of later steps: on their events at once, and for profile or crowd
        rules also at each timer and bulk move.
      </p>
      {exited !== null && (
        <p data-testid="exit-summary">
          <strong>{formatCount(exited)}</strong> {exited === 1 ? 'user' : 'users'} exited early.
        </p>
      )}
    </>
  );
}

/** On a step, beside its count: how many users exited early from it, once any did (short, the words in its title). */
export function StepExited({ step }: { step: string }) {
  const exited = useExited(step);
  if (!exited) return null;
  const words = `${formatCount(exited)} exited early: they met the journey's exit criteria in this step`;
  return (
    <span className="step-exited" data-testid="step-exited" data-exited={exited} title={words} role="img" aria-label={words}>
      ⏏ {formatCount(exited)} exited
    </span>
  );
}

/** The inspector's line for the selected step. */
export function StepExitedLine({ step }: { step: string }) {
  const exited = useExited(step);
  if (exited === null) return null;
  return (
    <p className="step-goal" data-testid="step-exited-line">
      ⏏ Exited early: {formatCount(exited)} {exited === 1 ? 'user' : 'users'} met the journey's exit criteria in this step.
    </p>
  );
}
