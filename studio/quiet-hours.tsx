'use client';
import { useEffect, useState, type FormEvent } from 'react';
import { DEFAULT_QUIET_ZONE_ATTRIBUTE, quietHoursProblems } from '../core/model/quiet-hours';
import type { QuietHoursView } from '../server/webhooks/quiet-rules';
import { useAction } from './actions';
import { ApiError, apiCall, apiGet, tenantPath } from './api';
import { setQueryData, useQuery } from './query';
import { ErrorBox } from './ui';

// The tenant's quiet hours (issue 37 §3) on the webhooks page: no action deliveries between two times in each user's
// own zone, held until the window opens there or dropped. The times are checked as typed with the server's own
// quietHoursProblems(); the server says the last word (an unknown zone, a malformed attribute path).

const quietKey = (tenant: string) => `quiet-hours:${tenant}`;

/** The rule, or null when the tenant has none (the API's 404). */
async function readRule(tenant: string): Promise<QuietHoursView | null> {
  try {
    return await apiGet<QuietHoursView>(tenantPath(tenant, '/quiet-hours'));
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return null;
    throw error;
  }
}

/** "No webhooks 21:00–08:00 in each user's zone (timezone, else UTC); held until 08:00 there." */
export function quietHoursWords(rule: Pick<QuietHoursView, 'start' | 'end' | 'mode' | 'zoneAttribute' | 'defaultZone'>): string {
  const then = rule.mode === 'hold' ? `held until ${rule.end} there` : 'dropped';
  return `No webhooks ${rule.start}–${rule.end} in each user's zone (${rule.zoneAttribute}, else ${rule.defaultZone}); deliveries due then are ${then}.`;
}

export function QuietHoursForm({ tenant }: { tenant: string }) {
  const rule = useQuery(quietKey(tenant), () => readRule(tenant));
  const [start, setStart] = useState('21:00');
  const [end, setEnd] = useState('08:00');
  const [mode, setMode] = useState<'hold' | 'drop'>('hold');
  const [zoneAttribute, setZoneAttribute] = useState(DEFAULT_QUIET_ZONE_ATTRIBUTE);
  const [defaultZone, setDefaultZone] = useState('UTC');
  const action = useAction();
  const saved = rule.data;
  // The saved rule fills the form when it arrives (and after a save).
  useEffect(() => {
    if (!saved) return;
    setStart(saved.start);
    setEnd(saved.end);
    setMode(saved.mode);
    setZoneAttribute(saved.zoneAttribute);
    setDefaultZone(saved.defaultZone);
  }, [saved]);
  const problems = quietHoursProblems({ start, end, defaultZone });

  function save(event: FormEvent) {
    event.preventDefault();
    void action.run(async () => {
      const body = { start, end, mode, zoneAttribute, defaultZone };
      setQueryData(quietKey(tenant), await apiCall<QuietHoursView>('PUT', tenantPath(tenant, '/quiet-hours'), body));
    });
  }

  function remove() {
    void action.run(async () => {
      await apiCall('DELETE', tenantPath(tenant, '/quiet-hours'));
      setQueryData(quietKey(tenant), null);
    });
  }

  return (
    <form onSubmit={save} className="card" data-testid="quiet-hours-form" aria-labelledby="quiet-hours-title">
      <h2 id="quiet-hours-title">Quiet hours</h2>
      <p className="small" data-testid="quiet-hours-status" role="status">
        {rule.loading && saved === undefined
          ? 'Loading…'
          : saved
            ? quietHoursWords(saved)
            : 'None: webhooks go at any hour. Set a window below; a journey may opt out or set its own in its panel.'}
      </p>
      <div className="row">
        <label>
          From (HH:MM)
          <input
            value={start}
            onChange={(e) => setStart(e.target.value)}
            inputMode="numeric"
            maxLength={5}
            aria-invalid={problems.some((p) => p.field === 'start')}
            data-testid="quiet-start"
          />
        </label>
        <label>
          Until (HH:MM)
          <input
            value={end}
            onChange={(e) => setEnd(e.target.value)}
            inputMode="numeric"
            maxLength={5}
            aria-invalid={problems.some((p) => p.field === 'end')}
            data-testid="quiet-end"
          />
        </label>
        <label>
          Deliveries due then
          <select value={mode} onChange={(e) => setMode(e.target.value as 'hold' | 'drop')} data-testid="quiet-mode">
            <option value="hold">Hold until the window opens</option>
            <option value="drop">Drop them</option>
          </select>
        </label>
        <label>
          Zone attribute
          <input value={zoneAttribute} onChange={(e) => setZoneAttribute(e.target.value)} maxLength={256} data-testid="quiet-zone-attribute" />
        </label>
        <label>
          Zone of users without one
          <input
            value={defaultZone}
            onChange={(e) => setDefaultZone(e.target.value)}
            maxLength={64}
            aria-invalid={problems.some((p) => p.field === 'defaultZone')}
            data-testid="quiet-default-zone"
          />
        </label>
      </div>
      {problems.length > 0 && (
        <ul className="error-text" data-testid="quiet-problems">
          {problems.map((p) => (
            <li key={p.field + p.message}>{p.message}</li>
          ))}
        </ul>
      )}
      <div className="row">
        <button type="submit" disabled={problems.length > 0} data-testid="quiet-save">
          {saved ? 'Save quiet hours' : 'Set quiet hours'}
        </button>
        {saved && (
          <button type="button" onClick={remove} data-testid="quiet-remove">
            Remove
          </button>
        )}
      </div>
      {(action.error ?? rule.error) && <ErrorBox error={(action.error ?? rule.error)!} />}
    </form>
  );
}
