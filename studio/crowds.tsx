'use client';
import { useRef, useState, type FormEvent } from 'react';
import { useAction } from './actions';
import { type ApiError, API_ROOT, apiCall, apiGet, apiUpload, pathSegment, tenantPath, uploadContentType } from './api';
import { listOf, type CrowdView } from './model';
import { invalidate, useQuery } from './query';
import { ListTable, type Column } from './list-table';
import { ErrorBox, formatBytes, formatCount } from './ui';

export const crowdsKey = (tenant: string) => `crowds:${tenant}`;

/** A crowd name from a file name: `vip-users.csv` → `vip-users`. */
function nameFromFile(file: string): string {
  return (
    file
      .replace(/\.[^.]+$/, '')
      .replace(/[^A-Za-z0-9_-]+/g, '-')
      .slice(0, 64) || 'crowd'
  );
}

export function UploadForm({ tenant, onUploaded }: { tenant: string; onUploaded?: (crowd: CrowdView) => void }) {
  const input = useRef<HTMLInputElement>(null);
  const [file, setFile] = useState<File | null>(null);
  const [name, setName] = useState('');
  /** A name the marketer typed is kept for the next file; one taken from a file name follows the next file. */
  const [nameTyped, setNameTyped] = useState(false);
  const [replace, setReplace] = useState(false);
  const [progress, setProgress] = useState<number | null>(null);
  const [result, setResult] = useState<CrowdView | null>(null);
  const [error, setError] = useState<ApiError | null>(null);

  async function upload(event: FormEvent) {
    event.preventDefault();
    if (!file) return;
    setError(null);
    setResult(null);
    setProgress(0);
    try {
      const path = tenantPath(tenant, `/crowds/${pathSegment(name)}`);
      const crowd = await apiUpload<CrowdView>(replace ? 'PUT' : 'POST', path, file, uploadContentType(file.name), setProgress);
      setResult(crowd);
      await invalidate(crowdsKey(tenant));
      onUploaded?.(crowd);
    } catch (caught) {
      setError(caught as ApiError);
      setProgress(null);
    }
  }

  return (
    <form onSubmit={upload} className="card upload-form" data-testid="upload-form">
      <h2>Upload a crowd</h2>
      <p className="muted small">User IDs as text (one per line), CSV (first column), a JSON array, or a portable roaring bitmap (.roaring).</p>
      <div className="row">
        <label>
          File
          <input
            ref={input}
            type="file"
            accept=".txt,.csv,.json,.roaring,.bin,text/plain,text/csv,application/json,application/octet-stream"
            data-testid="crowd-file"
            onChange={(e) => {
              const picked = e.target.files?.[0] ?? null;
              setFile(picked);
              setError(null);
              setResult(null);
              setProgress(null);
              if (picked && (!nameTyped || !name)) {
                setName(nameFromFile(picked.name));
                setNameTyped(false);
              }
            }}
          />
        </label>
        <label>
          Crowd name
          <input
            value={name}
            onChange={(e) => {
              setName(e.target.value);
              setNameTyped(true);
            }}
            required
            data-testid="crowd-name"
          />
        </label>
        <label className="inline">
          <input type="checkbox" checked={replace} onChange={(e) => setReplace(e.target.checked)} data-testid="crowd-replace" /> Replace if it exists
        </label>
        <button type="submit" className="primary" disabled={!file || !name || (progress !== null && progress < 1 && !result && !error)} data-testid="upload">
          Upload
        </button>
      </div>
      {progress !== null && (
        <div className="upload-progress">
          <div className="progress" role="progressbar" aria-valuemin={0} aria-valuemax={100} aria-valuenow={Math.round(progress * 100)}>
            <div style={{ width: `${Math.round(progress * 100)}%` }} />
          </div>
          <span className="muted small">{result ? 'Done' : progress < 1 ? `Uploading ${Math.round(progress * 100)}%` : 'Processing…'}</span>
        </div>
      )}
      {result && (
        <p className="ok-text" data-testid="upload-result">
          Crowd “{result.name}”: {formatCount(result.count)} users ({formatBytes(result.sizeBytes)})
        </p>
      )}
      {error && (
        <ErrorBox
          error={
            error.code === 'conflict' && !replace
              ? `A crowd named “${name}” already exists. Tick “Replace if it exists” to overwrite it, or choose another name.`
              : error
          }
        />
      )}
    </form>
  );
}

function CombineForm({ tenant, crowds }: { tenant: string; crowds: CrowdView[] }) {
  const [op, setOp] = useState<'union' | 'intersection' | 'difference'>('union');
  const [picked, setPicked] = useState<string[]>([]);
  const [name, setName] = useState('');
  const action = useAction();
  const [result, setResult] = useState<CrowdView | null>(null);

  function combine(event: FormEvent) {
    event.preventDefault();
    setResult(null);
    void action.run(async () => {
      setResult(await apiCall<CrowdView>('POST', tenantPath(tenant, '/combine-crowds'), { name, op, crowds: picked }));
      await invalidate(crowdsKey(tenant));
    });
  }

  return (
    <form onSubmit={combine} className="card" data-testid="combine-form">
      <h2>Combine crowds</h2>
      <div className="row">
        <label>
          Operation
          <select value={op} onChange={(e) => setOp(e.target.value as typeof op)}>
            <option value="union">Union (in any)</option>
            <option value="intersection">Intersection (in all)</option>
            <option value="difference">Difference (first minus the others)</option>
          </select>
        </label>
        <label>
          Crowds (in order)
          <select
            multiple
            value={picked}
            // keep the order of picking: a difference is the first crowd picked minus the others
            onChange={(e) => {
              const selected = [...e.target.selectedOptions].map((o) => o.value);
              setPicked((previous) => [...previous.filter((n) => selected.includes(n)), ...selected.filter((n) => !previous.includes(n))]);
            }}
            size={Math.min(5, Math.max(2, crowds.length))}
          >
            {crowds.map((c) => (
              <option key={c.name} value={c.name}>
                {c.name}
              </option>
            ))}
          </select>
        </label>
        <label>
          New crowd name
          <input value={name} onChange={(e) => setName(e.target.value)} required />
        </label>
        <button type="submit" disabled={picked.length < 2 || !name}>
          Combine
        </button>
      </div>
      {picked.length > 1 && <p className="muted small">{picked.join(op === 'union' ? ' ∪ ' : op === 'intersection' ? ' ∩ ' : ' − ')}</p>}
      {result && (
        <p className="ok-text">
          Crowd “{result.name}”: {formatCount(result.count)} users
        </p>
      )}
      {action.error && <ErrorBox error={action.error} />}
    </form>
  );
}

export function CrowdsPage({ tenant }: { tenant: string }) {
  const crowds = useQuery<CrowdView[]>(crowdsKey(tenant), async () => listOf<CrowdView>(await apiGet(tenantPath(tenant, '/crowds')), 'crowds'));
  const action = useAction();
  const exportHref = (name: string, format: 'csv' | 'roaring') => `${API_ROOT}${tenantPath(tenant, `/crowds/${pathSegment(name)}/export`)}?format=${format}`;

  function remove(name: string) {
    if (!window.confirm(`Delete crowd "${name}"?`)) return;
    void action.run(async () => {
      await apiCall('DELETE', tenantPath(tenant, `/crowds/${pathSegment(name)}`));
      await invalidate(crowdsKey(tenant));
    });
  }

  const columns: Column<CrowdView>[] = [
    { header: 'Name', cell: (c) => c.name },
    { header: 'Users', cell: (c) => <span data-testid="crowd-row-count">{formatCount(c.count)}</span> },
    { header: 'Size', cell: (c) => formatBytes(c.sizeBytes) },
    { header: 'Updated', cell: (c) => new Date(c.updatedAt).toLocaleString(), className: 'muted' },
    {
      header: '',
      className: 'actions',
      cell: (c) => (
        <>
          <span className="muted">Export</span>{' '}
          <a href={exportHref(c.name, 'csv')} download={`${c.name}.csv`}>
            CSV
          </a>{' '}
          ·{' '}
          <a href={exportHref(c.name, 'roaring')} download={`${c.name}.roaring`}>
            roaring
          </a>
          <button type="button" className="link danger" onClick={() => remove(c.name)}>
            Delete
          </button>
        </>
      ),
    },
  ];

  return (
    <section className="stack">
      <h1>Crowds</h1>
      <UploadForm tenant={tenant} />
      {action.error && <ErrorBox error={action.error} />}
      <ListTable
        query={crowds}
        what="crowds"
        empty="No crowds yet. Upload a file of user IDs above."
        columns={columns}
        rowKey={(c) => c.name}
        testId="crowd-table"
        rowTestId="crowd-row"
        rowProps={(c) => ({ 'data-crowd': c.name })}
      />
      {crowds.data && crowds.data.length > 0 && <CombineForm tenant={tenant} crowds={crowds.data} />}
    </section>
  );
}
