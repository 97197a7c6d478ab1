'use client';
import { useEffect, useMemo, useState } from 'react';
import { analyzeCondition } from '../../server/conditions/analyze';
import { apiCall, pathSegment, tenantPath } from '../api';
import type { AudienceResult, StepConditionExplanation } from '../model';
import { formatCount } from '../ui';

// Under a condition: "≈ N users match now" and how the server runs it (a bitmap plan, or user by user, and why),
// asked again shortly after each edit. Both answers come from the profile index and crowd bitmaps in milliseconds.

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
  const [explanation, setExplanation] = useState<Explanation | null>(null);
  // event.type or event.data are known only when an event arrives: no count of who matches "now" means anything
  const perEvent = useMemo(() => {
    const analyzed = condition ? analyzeCondition(condition) : null;
    return analyzed?.ok === true && analyzed.condition.usage.usesEvent;
  }, [condition]);
  useEffect(() => {
    if (!tenant || !condition) {
      setAudience(null);
      setExplanation(null);
      return;
    }
    let current = true;
    const timer = setTimeout(() => {
      // no answer (a condition the server cannot count, a workflow not saved yet): say nothing rather than something wrong
      if (perEvent) setAudience(null);
      else {
        apiCall<AudienceResult>('POST', tenantPath(tenant, '/audience'), { condition, sample: 0 })
          .then((answer) => current && setAudience(answer))
          .catch(() => current && setAudience(null));
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
        <p className="muted small" data-testid="audience">
          {audience.exact ? '' : '≈ '}
          <strong>{formatCount(audience.count)}</strong> user{audience.count === 1 ? '' : 's'} match now (of {formatCount(audience.universe)}
          {audience.exact ? '' : `; estimated from ${formatCount(audience.evaluated)} users`})
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
