'use client';
import { REENTRY_POLICIES, type EntryTrigger } from '../../core/model/workflow';
import { ConditionEditor } from './condition';
import { ExitPanel } from './exit-criteria';
import { GoalSummary } from './goal-result';
import { HoldoutPanel } from './holdout';
import { JourneyQuietHours } from './journey-quiet-hours';
import { useEditor, useEditorStore } from './store';

const REENTRY_TEXT: Record<(typeof REENTRY_POLICIES)[number], string> = {
  once: 'once per instance',
  again: 'again after reaching an end step',
};

/**
 * What the workflow holds besides its steps, shown in the inspector while no step is selected: the event-triggered
 * entry (users not in the instance enter the entry step on an event of this type) and the goal (users for whom its
 * condition holds on an event are counted as converted), the exit criteria (./exit-criteria.tsx), the holdout
 * (./holdout.tsx) and the journey's quiet hours (./journey-quiet-hours.tsx).
 */
export function WorkflowPanel({ readOnly }: { readOnly: boolean }) {
  const store = useEditorStore();
  const { entry, goal } = useEditor((s) => s.extras);
  const change = (patch: Partial<EntryTrigger>) => {
    if (readOnly || !entry) return;
    const next: EntryTrigger = { ...entry, ...patch };
    for (const key of ['condition', 'crowd'] as const) if (!next[key]) delete next[key];
    store.setExtras({ entry: next });
  };
  return (
    <fieldset disabled={readOnly} className="workflow-panel" data-testid="workflow-panel">
      <h3>Entry</h3>
      <label className="row">
        <input
          type="checkbox"
          checked={entry !== undefined}
          onChange={(e) => store.setExtras({ entry: e.target.checked ? { event: '', reentry: 'once' } : undefined })}
          data-testid="entry-enabled"
        />
        Users also enter when an event arrives
      </label>
      {entry && (
        <>
          <label>
            Event type
            <input value={entry.event} placeholder="e.g. signup" onChange={(e) => change({ event: e.target.value })} data-testid="entry-event-input" />
          </label>
          <ConditionEditor label="Only when (optional)" optional value={entry.condition} onChange={(text) => change({ condition: text })} />
          <label>
            Only users of crowd (optional)
            <input
              value={entry.crowd ?? ''}
              placeholder="any user"
              onChange={(e) => change({ crowd: e.target.value || undefined })}
              data-testid="entry-crowd-input"
            />
          </label>
          <label>
            A user may enter
            <select value={entry.reentry} onChange={(e) => change({ reentry: e.target.value as EntryTrigger['reentry'] })} data-testid="entry-reentry-select">
              {REENTRY_POLICIES.map((policy) => (
                <option key={policy} value={policy}>
                  {REENTRY_TEXT[policy]}
                </option>
              ))}
            </select>
          </label>
          <p className="muted small">The instance may then start without a crowd.</p>
        </>
      )}
      <h3>Goal</h3>
      <label className="row">
        <input
          type="checkbox"
          checked={goal !== undefined}
          onChange={(e) => store.setExtras({ goal: e.target.checked ? { condition: 'event.type == "purchase"' } : undefined })}
          data-testid="goal-enabled"
        />
        Count users who reach a goal
      </label>
      <GoalSummary />
      {goal && (
        <ConditionEditor label="Converted when" value={goal.condition} onChange={(text) => !readOnly && store.setExtras({ goal: { condition: text ?? '' } })} />
      )}
      <ExitPanel readOnly={readOnly} />
      <HoldoutPanel readOnly={readOnly} />
      <JourneyQuietHours readOnly={readOnly} />
    </fieldset>
  );
}
