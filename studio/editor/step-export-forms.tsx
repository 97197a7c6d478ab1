'use client';
import { useId, useState, type FormEvent } from 'react';
import { type ApiError, API_ROOT, apiCall, apiGet, pathSegment, tenantPath } from '../api';
import { crowdsKey } from '../crowds';
import type { CrowdView } from '../model';
import { invalidate, useQuery } from '../query';
import { ErrorBox, formatCount } from '../ui';
import { type ProfileField, readProfileFields } from './fields';

// Two forms of a step's menu (step-menu.tsx): export the step's users with profile columns as CSV or Parquet, and
// save them as a new crowd. Each opens from its own button inside the menu; Escape closes the menu as elsewhere.

export type StepUsers = 'in' | 'converted';

type StepRef = { tenant: string; instanceId: string; stepName: string; hasGoal: boolean };

const stepPath = ({ tenant, instanceId, stepName }: StepRef, rest: string) =>
  tenantPath(tenant, `/instances/${instanceId}/steps/${pathSegment(stepName)}${rest}`);

/** Which users: a choice only when the running version has a goal. */
function UsersChoice({ hasGoal, users, onChange }: { hasGoal: boolean; users: StepUsers; onChange: (users: StepUsers) => void }) {
  const id = useId();
  if (!hasGoal) return null;
  return (
    <label htmlFor={id} className="field">
      Users
      <select id={id} value={users} onChange={(event) => onChange(event.target.value as StepUsers)}>
        <option value="in">In this step now</option>
        <option value="converted">Converted from this step</option>
      </select>
    </label>
  );
}

/**
 * Profile columns to add after the user ID (from …/profiles/fields), the file format, and the download link; with
 * `asOf` (a past moment shown, as-of.tsx) of the users at the step then.
 */
export function ExportColumnsForm({ asOf, ...step }: StepRef & { asOf: string | null }) {
  const { tenant } = step;
  const fields = useQuery<ProfileField[]>(`profile-fields:${tenant}`, async () => readProfileFields(await apiGet(tenantPath(tenant, '/profiles/fields'))));
  const [columns, setColumns] = useState<string[]>([]);
  const [format, setFormat] = useState<'csv' | 'parquet'>('csv');
  const [users, setUsers] = useState<StepUsers>('in');
  const formatId = useId();
  const query = new URLSearchParams({
    format,
    ...(columns.length ? { columns: columns.join(',') } : {}),
    ...(users === 'converted' ? { users } : {}),
    ...(asOf ? { asOf } : {}),
  });
  const href = `${API_ROOT}${stepPath(step, '/export')}?${query.toString().replace(/%2C/g, ',')}`;
  const toggle = (path: string, checked: boolean) => setColumns((now) => (checked ? [...now, path] : now.filter((c) => c !== path)));

  return (
    <div className="step-export-form" data-testid="export-columns-form">
      <fieldset className="field">
        <legend>Columns after the user ID</legend>
        {fields.error && <ErrorBox error={fields.error as ApiError} />}
        {fields.data?.length === 0 && <p className="muted small">No profile attributes yet: import profiles to add columns.</p>}
        <div className="column-choices">
          {fields.data?.map((field) => (
            <label key={field.path} className="check">
              <input type="checkbox" checked={columns.includes(field.path)} onChange={(event) => toggle(field.path, event.target.checked)} />
              {field.path}
              <span className="muted small">
                {' '}
                {field.type}
                {field.users !== undefined ? ` · ${formatCount(field.users)} users` : ''}
              </span>
            </label>
          ))}
        </div>
      </fieldset>
      <label htmlFor={formatId} className="field">
        Format
        <select id={formatId} value={format} onChange={(event) => setFormat(event.target.value as 'csv' | 'parquet')}>
          <option value="csv">CSV (header row)</option>
          <option value="parquet">Parquet (typed columns)</option>
        </select>
      </label>
      <UsersChoice hasGoal={step.hasGoal} users={users} onChange={setUsers} />
      <a className="button primary" href={href} download data-testid="export-columns-download">
        Download {format === 'csv' ? 'CSV' : 'Parquet'}
        {columns.length ? ` with ${columns.length} column${columns.length === 1 ? '' : 's'}` : ''}
      </a>
    </div>
  );
}

/** A name for the new crowd, which users, and the one call that copies them (POST …/steps/{step}/crowd). */
export function SaveCrowdForm(step: StepRef) {
  const [name, setName] = useState('');
  const [users, setUsers] = useState<StepUsers>('in');
  const [saved, setSaved] = useState<CrowdView | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);
  const nameId = useId();

  async function save(event: FormEvent) {
    event.preventDefault();
    setError(null);
    setSaved(null);
    setBusy(true);
    try {
      setSaved(await apiCall<CrowdView>('POST', stepPath(step, '/crowd'), { name: name.trim(), users }));
      await invalidate(crowdsKey(step.tenant));
    } catch (caught) {
      setError(caught as ApiError);
    } finally {
      setBusy(false);
    }
  }

  return (
    <form className="step-export-form" onSubmit={save} data-testid="save-crowd-form">
      <label htmlFor={nameId} className="field">
        New crowd name
        <input id={nameId} value={name} onChange={(event) => setName(event.target.value)} placeholder="e.g. retarget-bought" autoComplete="off" />
      </label>
      <UsersChoice hasGoal={step.hasGoal} users={users} onChange={setUsers} />
      <button type="submit" className="primary" disabled={busy || name.trim() === ''}>
        Save crowd
      </button>
      <p className="small" role="status" data-testid="save-crowd-status">
        {saved ? `Saved crowd “${saved.name}” with ${formatCount(saved.count)} user${saved.count === 1 ? '' : 's'}.` : ''}
      </p>
      {error && <ErrorBox error={error} />}
    </form>
  );
}
