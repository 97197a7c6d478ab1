'use client';
import { useRef, useState, type FormEvent } from 'react';
import { type ApiError, apiGet, tenantPath } from './api';
import type { FieldSummary, ProfileView } from './model';
import { detectFormat, importProfileFile, type ImportFormat, type ImportProgress, type ImportSummary } from './profile-import';
import { invalidate, useQuery } from './query';
import { ErrorBox, formatBytes, formatCount, formatShare, Loading } from './ui';

// The Profiles page: import a file of profiles (progress in bytes sent and lines imported), see what the profile
// index holds per attribute (type, users, most common values, how conditions on it are answered), look up one user.

type FieldsView = { profiles: number; bitmapBytes: number; fields: FieldSummary[] };

export const profileIndexKey = (tenant: string) => `profile-index:${tenant}`;
/** Every query built from the profile index: this page's summary and the rule builder's field catalog. */
const refreshProfileQueries = (tenant: string) => Promise.all([invalidate(profileIndexKey(tenant)), invalidate(`profile-fields:${tenant}`)]);

const formatSeconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

function ImportForm({ tenant }: { tenant: string }) {
  const [file, setFile] = useState<File | null>(null);
  const [format, setFormat] = useState<'auto' | ImportFormat>('auto');
  const [types, setTypes] = useState('');
  const [progress, setProgress] = useState<ImportProgress | null>(null);
  const [summary, setSummary] = useState<ImportSummary | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [running, setRunning] = useState(false);
  const stop = useRef<AbortController | null>(null);

  async function run(event: FormEvent) {
    event.preventDefault();
    if (!file) return;
    setError(null);
    setSummary(null);
    const controller = new AbortController();
    stop.current = controller;
    setRunning(true);
    try {
      const chosen = format === 'auto' ? await detectFormat(file) : format;
      setSummary(
        await importProfileFile(tenant, file, chosen, { types: chosen === 'csv' ? types : undefined, onProgress: setProgress, signal: controller.signal }),
      );
    } catch (caught) {
      setError(caught as ApiError);
    } finally {
      stop.current = null;
      setRunning(false);
      await refreshProfileQueries(tenant);
    }
  }

  const sentShare = progress && progress.totalBytes > 0 ? progress.bytesSent / progress.totalBytes : 0;
  return (
    <form onSubmit={run} className="card" data-testid="profile-import">
      <h2>Import profiles</h2>
      <p className="muted small">
        NDJSON, one <code>{'{"user": 7, "attributes": {"plan": "pro"}}'}</code> a line, or CSV with a header row (<code>user,plan,age,address.country</code>; an
        empty cell leaves the attribute out). Attributes are merged into existing profiles.
      </p>
      <div className="row">
        <label>
          File
          <input
            type="file"
            accept=".ndjson,.jsonl,.json,.csv,application/x-ndjson,text/csv"
            data-testid="profile-file"
            onChange={(e) => {
              setFile(e.target.files?.[0] ?? null);
              setProgress(null);
              setSummary(null);
              setError(null);
            }}
          />
        </label>
        <label>
          Format
          <select value={format} onChange={(e) => setFormat(e.target.value as typeof format)} data-testid="profile-format">
            <option value="auto">From the file name</option>
            <option value="ndjson">NDJSON</option>
            <option value="csv">CSV</option>
          </select>
        </label>
        {format !== 'ndjson' && !file?.name.toLowerCase().match(/\.(ndjson|jsonl|json)$/) && (
          <label>
            CSV column types (optional)
            <input value={types} onChange={(e) => setTypes(e.target.value)} placeholder="zip:string,age:number" data-testid="profile-types" />
          </label>
        )}
        <button type="submit" className="primary" disabled={!file || running} data-testid="profile-import-start">
          Import
        </button>
        {running && (
          <button type="button" onClick={() => stop.current?.abort()} data-testid="profile-import-stop">
            Stop
          </button>
        )}
      </div>
      {progress && (
        <div className="upload-progress">
          <div
            className={error ? 'progress failed' : 'progress'}
            role="progressbar"
            aria-label="Bytes sent"
            aria-valuemin={0}
            aria-valuemax={100}
            aria-valuenow={Math.round(sentShare * 100)}
          >
            <div style={{ width: `${Math.round(sentShare * 100)}%` }} />
          </div>
          <span className="muted small" data-testid="profile-import-progress">
            {formatBytes(progress.bytesSent)} of {formatBytes(progress.totalBytes)} sent ·{' '}
            <strong data-testid="profile-lines-imported">{formatCount(progress.linesImported)}</strong> lines imported
          </span>
        </div>
      )}
      {summary && (
        <p className="ok-text" data-testid="profile-import-result">
          Imported {formatCount(summary.linesImported)} lines ({formatCount(summary.created)} new profiles) in {formatSeconds(summary.ms)}.
        </p>
      )}
      {error && <ErrorBox error={error.code === 'aborted' ? `Stopped: ${formatCount(progress?.linesImported ?? 0)} lines were imported before it.` : error} />}
    </form>
  );
}

/** How a condition on the field is answered, in a marketer's words. */
function indexNote(field: FieldSummary): string {
  if (field.highCardinality) return 'Many distinct values: conditions on it check users one by one';
  if (field.type === 'timestamp') return 'Times: ranges are bitmap operations';
  if (field.numbers) return `Numbers: ranges are bitmap operations (${field.numbers.bitSlices} bit slices)`;
  if (field.type === 'object') return 'Has nested fields';
  return 'Equality is one bitmap per value';
}

function FieldsTable({ tenant }: { tenant: string }) {
  const index = useQuery<FieldsView>(profileIndexKey(tenant), () => apiGet<FieldsView>(tenantPath(tenant, '/profiles/fields')));
  if (index.loading && !index.data) return <Loading what="profile fields" />;
  if (index.error) return <ErrorBox error={index.error} onRetry={index.refetch} />;
  if (!index.data) return null;
  const { profiles, bitmapBytes, fields } = index.data;
  return (
    <section className="card" data-testid="profile-fields">
      <div className="row spread">
        <h2>Attributes</h2>
        <span className="muted small" data-testid="profile-count">
          {formatCount(profiles)} profiles · index {formatBytes(bitmapBytes)}
        </span>
      </div>
      {fields.length === 0 ? (
        <p className="state state-empty">No profiles yet. Import a file above, or send them with POST /profiles.</p>
      ) : (
        <table>
          <thead>
            <tr>
              <th scope="col">Attribute</th>
              <th scope="col">Type</th>
              <th scope="col">Users</th>
              <th scope="col">Most common values</th>
              <th scope="col">In conditions</th>
            </tr>
          </thead>
          <tbody>
            {fields.map((field) => (
              <tr key={field.path} data-testid="profile-field" data-field={field.path}>
                <td>
                  <code>profile.{field.path}</code>
                </td>
                <td data-testid="profile-field-type">{field.type}</td>
                <td className="nowrap">
                  <span data-testid="profile-field-users">{formatCount(field.users)}</span>{' '}
                  <span className="muted small">{formatShare(field.users, profiles)}</span>
                </td>
                <td>
                  <span className="chips">
                    {field.topValues.slice(0, 5).map((top) => (
                      <span key={String(top.value)} className="chip" data-testid="profile-top-value">
                        {String(top.value)} <span className="muted">{formatCount(top.users)}</span>
                      </span>
                    ))}
                    {field.topValues.length === 0 && <span className="muted small">{field.highCardinality ? 'too many different values to list' : '—'}</span>}
                  </span>
                </td>
                <td className="muted small">{indexNote(field)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

/** Nested attributes as dotted paths, the way conditions name them. */
function flatten(attributes: Record<string, unknown>, prefix = ''): [string, unknown][] {
  return Object.entries(attributes).flatMap(([key, value]) =>
    value && typeof value === 'object' && !Array.isArray(value)
      ? flatten(value as Record<string, unknown>, `${prefix}${key}.`)
      : [[`${prefix}${key}`, value] as [string, unknown]],
  );
}

function Lookup({ tenant }: { tenant: string }) {
  const [user, setUser] = useState('');
  const [profile, setProfile] = useState<ProfileView | null>(null);
  const [error, setError] = useState<ApiError | string | null>(null);

  async function find(event: FormEvent) {
    event.preventDefault();
    setProfile(null);
    setError(null);
    if (!/^\d{1,10}$/.test(user.trim())) return setError('A user ID is a whole number, e.g. 42');
    try {
      setProfile(await apiGet<ProfileView>(tenantPath(tenant, `/profiles/${user.trim()}`)));
    } catch (caught) {
      const failure = caught as ApiError;
      setError(failure.status === 404 && failure.code === 'not_found' ? `User ${user.trim()} has no profile` : failure);
    }
  }

  return (
    <form onSubmit={find} className="card" data-testid="profile-lookup">
      <h2>Look up a user</h2>
      <div className="row">
        <label>
          User ID
          <input value={user} onChange={(e) => setUser(e.target.value)} inputMode="numeric" placeholder="42" data-testid="profile-user" />
        </label>
        <button type="submit" disabled={!user.trim()} data-testid="profile-find">
          Look up
        </button>
      </div>
      {error && <ErrorBox error={error} />}
      {profile && (
        <div data-testid="profile-found">
          <dl className="facts">
            {flatten(profile.attributes).map(([path, value]) => (
              <div key={path} className="fact" data-testid="profile-attribute" data-path={path}>
                <dt>profile.{path}</dt>
                <dd>{JSON.stringify(value)}</dd>
              </div>
            ))}
          </dl>
          <p className="muted small">Updated {new Date(profile.updatedAt).toLocaleString()}</p>
        </div>
      )}
    </form>
  );
}

export function ProfilesPage({ tenant }: { tenant: string }) {
  return (
    <section className="stack">
      <h1>Profiles</h1>
      <ImportForm tenant={tenant} />
      <FieldsTable tenant={tenant} />
      <Lookup tenant={tenant} />
    </section>
  );
}
