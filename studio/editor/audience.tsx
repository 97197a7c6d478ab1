'use client';
import { useEffect, useMemo, useState } from 'react';
import { analyzeCondition } from '../../core/conditions/analyze';
import { apiCall, pathSegment, tenantPath } from '../api';
import type { AudienceResult, StepConditionExplanation } from '../model';
import { formatCount } from '../ui';

// Under a condition: "exactly N users match now", or "≈ N (low–high)" when the server sampled, and how the server
// runs it (a bitmap plan, or user by user, and why), asked again shortly after each edit. Until the new answer
// arrives the old figure stays, marked as updating (issue 32 §2).

type Explanation = Pick<StepConditionExplanation, 'mode' | 'reason' | 'leaves'>;

const ASK_AFTER_MS = 350;

/**
 * The explain endpoint takes a workflow definition; the inspector asks about one condition, as a one-step
 * definition, so the answer never waits for the rest of the draft (unconnected outputs are not a valid definition).
 */
function explainOne(tenant: string, workflowId: string, condition: string): Promise<Explanation | undefined> {
  const definition = { steps: [{ name: 'condition', kind: 'branch', branches: [{ condition, next: 'condition' }] }] };
  return apiCall<{ conditions: StepConditionExplanation[] }>('POST', tenantPath(tenant, `/workflows/${pathSegment(workflowId)}/explain`), { definition }).then(
    (answer) => answer.conditions[0],
  );
}

export function AudienceEstimate({ tenant, workflowId, condition }: { tenant: string; workflowId: string; condition: string | null }) {
  const [audience, setAudience] = useState<AudienceResult | null>(null);
  // The figure shown is for an earlier condition: a new estimate is being asked for.
  const [updating, setUpdating] = useState(false);
  const [explanation, setExplanation] = useState<Explanation | null>(null);
  // event.type or event.data are known only when an event arrives: no count of who matches "now" means anything
  const perEvent = useMemo(() => {
    const analyzed = condition ? analyzeCondition(condition) : null;
    return analyzed?.ok === true && analyzed.condition.usage.usesEvent;
  }, [condition]);
  useEffect(() => {
    if (!tenant) {
      setAudience(null);
      setExplanation(null);
      return;
    }
    // Text that does not parse yet (halfway through typing) hides the figure but keeps it: once the text parses again,
    // it is shown as updating until the new answer comes, rather than vanishing at every keystroke.
    if (!condition) return;
    let current = true;
    setUpdating(true);
    const answered = (answer: AudienceResult | null) => {
      if (!current) return;
      setAudience(answer);
      setUpdating(false);
    };
    const timer = setTimeout(() => {
      // no answer (a condition the server cannot count, a workflow not saved yet): say nothing rather than something wrong
      if (perEvent) answered(null);
      else {
        apiCall<AudienceResult>('POST', tenantPath(tenant, '/audience'), { condition, sample: 0 })
          .then(answered)
          .catch(() => answered(null));
      }
      if (workflowId) {
        explainOne(tenant, workflowId, condition)
          .then((answer) => current && setExplanation(answer ?? null))
          .catch(() => current && setExplanation(null));
      }
    }, ASK_AFTER_MS);
    return () => {
      current = false;
      clearTimeout(timer);
    };
  }, [tenant, workflowId, condition, perEvent]);
  if (!condition || (!audience && !explanation && !perEvent)) return null;
  return (
    <div className="audience" data-testid="condition-insight">
      {perEvent && (
        <p className="muted small" data-testid="audience-per-event">
          Decided for each event as it arrives (it reads the event), so there is no count ahead of time.
        </p>
      )}
      {audience && !perEvent && (
        <p className="muted small" data-testid="audience" aria-live="polite" aria-busy={updating} data-updating={updating}>
          <AudienceFigure audience={audience} /> user{audience.count === 1 ? '' : 's'} match now (of {formatCount(audience.universe)}
          {audience.exact ? '' : `; estimated from ${formatCount(audience.evaluated)} users`})
          {updating && <span className="audience-updating"> · updating…</span>}
        </p>
      )}
      {explanation && (
        <details className="explain" data-testid="explain" data-mode={explanation.mode}>
          <summary>
            <span className={explanation.mode === 'plan' ? 'badge plan' : 'badge per-user'} data-testid="explain-mode">
              {explanation.mode === 'plan' ? 'Bitmap plan' : 'Per user'}
            </span>{' '}
            <span className="muted small">
              {explanation.mode === 'plan'
                ? 'timers and estimates count all users at once'
                : perEvent
                  ? 'checked for the user of each event'
                  : 'timers and estimates check users one by one'}
            </span>
          </summary>
          <p className="small" data-testid="explain-reason">
            {explanation.reason}
          </p>
          {explanation.leaves.length > 0 && (
            <ul className="small explain-leaves">
              {explanation.leaves.map((leaf) => (
                <li key={leaf}>{leaf}</li>
              ))}
            </ul>
          )}
        </details>
      )}
    </div>
  );
}

/** "exactly 150", or "≈ 1,480 (1,350–1,610)" with the interval the true count lies in at the answer's confidence. */
function AudienceFigure({ audience }: { audience: AudienceResult }) {
  if (audience.exact) {
    return (
      <>
        exactly <strong>{formatCount(audience.count)}</strong>
      </>
    );
  }
  return (
    <span title={`The true count lies in this range with ${Math.round(audience.confidence * 100)}% confidence`}>
      ≈ <strong>{formatCount(audience.count)}</strong> ({formatCount(audience.low)}–{formatCount(audience.high)})
    </span>
  );
}
