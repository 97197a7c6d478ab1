'use client';
import { DEFAULT_QUIET_ZONE_ATTRIBUTE } from '../../core/model/quiet-hours';
import type { QuietHoursRule } from '../../core/model/workflow';
import { useEditor, useEditorStore } from './store';

// A journey's quiet hours (issue 37 §3) in the side panel with no step selected: follow the tenant's rule (absent),
// none (false: transactional journeys send at any hour) or the journey's own window. validateWorkflow() checks the
// times as they are typed, like every other field, and the problems bar names what is wrong.

type Choice = 'tenant' | 'none' | 'own';

const OWN_DEFAULT: QuietHoursRule = { start: '21:00', end: '08:00', mode: 'hold', zoneAttribute: DEFAULT_QUIET_ZONE_ATTRIBUTE, defaultZone: 'UTC' };

export function JourneyQuietHours({ readOnly }: { readOnly: boolean }) {
  const store = useEditorStore();
  const quiet = useEditor((s) => s.extras.quietHours);
  const choice: Choice = quiet === undefined ? 'tenant' : quiet === false ? 'none' : 'own';
  const choose = (next: Choice) => store.setExtras({ quietHours: next === 'tenant' ? undefined : next === 'none' ? false : OWN_DEFAULT });
  const change = (patch: Partial<QuietHoursRule>) => {
    if (!readOnly && quiet) store.setExtras({ quietHours: { ...quiet, ...patch } });
  };
  return (
    <>
      <h3>Quiet hours</h3>
      <label>
        This journey’s webhooks
        <select value={choice} onChange={(e) => choose(e.target.value as Choice)} data-testid="journey-quiet-select">
          <option value="tenant">follow the tenant’s quiet hours</option>
          <option value="none">go at any hour (transactional)</option>
          <option value="own">keep quiet hours of their own</option>
        </select>
      </label>
      {quiet && (
        <>
          <div className="row">
            <label>
              From
              <input
                value={quiet.start}
                maxLength={5}
                inputMode="numeric"
                onChange={(e) => change({ start: e.target.value })}
                data-testid="journey-quiet-start"
              />
            </label>
            <label>
              Until
              <input value={quiet.end} maxLength={5} inputMode="numeric" onChange={(e) => change({ end: e.target.value })} data-testid="journey-quiet-end" />
            </label>
          </div>
          <label>
            Deliveries due then
            <select value={quiet.mode} onChange={(e) => change({ mode: e.target.value as QuietHoursRule['mode'] })} data-testid="journey-quiet-mode">
              <option value="hold">hold until the window opens</option>
              <option value="drop">drop them</option>
            </select>
          </label>
          <p className="muted small" data-testid="journey-quiet-help">
            In each user’s zone ({quiet.zoneAttribute}, else {quiet.defaultZone}). Users still move; only the webhooks wait.
          </p>
        </>
      )}
    </>
  );
}
