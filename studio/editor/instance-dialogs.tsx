'use client';
import { useState } from 'react';
import { type ApiError, apiCall, apiGet, tenantPath } from '../api';
import { listOf, type CrowdView, type InstanceView, type WorkflowView } from '../model';
import { useQuery } from '../query';
import { Dialog, Empty, ErrorBox, Loading, formatCount } from '../ui';
import { crowdsKey, UploadForm } from '../crowds';
import { useOperation } from './operations';

// The dialogs that start an instance, update its crowd, and move it to the saved version.
function useCrowds(tenant: string) {
  return useQuery<CrowdView[]>(crowdsKey(tenant), async () => listOf<CrowdView>(await apiGet(tenantPath(tenant, '/crowds')), 'crowds'));
}

function CrowdPicker({ tenant, value, onChange }: { tenant: string; value: string; onChange: (name: string) => void }) {
  const crowds = useCrowds(tenant);
  if (crowds.loading && !crowds.data) return <Loading what="crowds" />;
  if (crowds.error) return <ErrorBox error={crowds.error} onRetry={crowds.refetch} />;
  if (!crowds.data?.length) return <Empty>No crowds in this tenant yet. Upload one on the Crowds page.</Empty>;
  const picked = crowds.data.find((c) => c.name === value);
  return (
    <label>
      Crowd
      <select value={value} onChange={(e) => onChange(e.target.value)} data-testid="crowd-select">
        <option value="">Pick a crowd…</option>
        {crowds.data.map((c) => (
          <option key={c.name} value={c.name}>
            {c.name} ({formatCount(c.count)} users)
          </option>
        ))}
      </select>
      {picked && <span data-testid="crowd-count">{formatCount(picked.count)} users in this crowd</span>}
    </label>
  );
}

export function StartDialog({ tenant, workflow, onClose }: { tenant: string; workflow: WorkflowView; onClose: () => void }) {
  const [crowd, setCrowd] = useState('');
  const [uploading, setUploading] = useState(false);
  const [started, setStarted] = useState<InstanceView | null>(null);
  const op = useOperation(tenant, workflow.id);
  // With an entry trigger users also enter by events, so the crowd is optional.
  const trigger = workflow.definition.entry;
  const start = async () => {
    let instanceId = '';
    const ok = await op.run(async () => {
      const body = crowd ? { crowd, version: workflow.version } : { version: workflow.version };
      const submitted = await apiCall<{ procedureId: string; instanceId: string }>('POST', tenantPath(tenant, `/workflows/${workflow.id}/start`), body);
      instanceId = submitted.instanceId;
      return submitted;
    });
    if (ok) setStarted(await apiGet<InstanceView>(tenantPath(tenant, `/instances/${instanceId}`)));
  };
  return (
    <Dialog title={`Start “${workflow.name}” v${workflow.version}`} onClose={onClose} testId="start-dialog">
      <div className="dialog-body">
        {started ? (
          <>
            <p data-testid="start-result">
              {started.crowdName ? `Started with ${formatCount(started.userCount)} users from “${started.crowdName}”` : 'Started without a crowd'}
              {trigger ? `; users enter on “${trigger.event}” events` : ''}
              {started.excludedCount > 0 ? `; ${formatCount(started.excludedCount)} were excluded because a previous instance already had them` : ''}.
            </p>
            <button type="button" className="primary" onClick={onClose}>
              Close
            </button>
          </>
        ) : (
          <>
            <CrowdPicker tenant={tenant} value={crowd} onChange={setCrowd} />
            {uploading ? (
              <UploadForm tenant={tenant} onUploaded={(uploaded) => setCrowd(uploaded.name)} />
            ) : (
              <button type="button" className="link" onClick={() => setUploading(true)}>
                …or upload a new crowd
              </button>
            )}
            <p className="muted small">Users a previous instance of this workflow already had are excluded from the new one.</p>
            {trigger && (
              <p className="muted small" data-testid="start-trigger-note">
                Users also enter on “{trigger.event}” events, so a crowd is optional.
              </p>
            )}
            {op.state && <p className="muted small">{op.state}</p>}
            {op.error && <ErrorBox error={op.error} />}
            <div className="row">
              <button type="button" className="primary" disabled={(!crowd && !trigger) || op.busy} onClick={() => void start()} data-testid="start-confirm">
                {op.busy ? 'Starting…' : 'Start'}
              </button>
              <button type="button" onClick={onClose}>
                Cancel
              </button>
            </div>
          </>
        )}
      </div>
    </Dialog>
  );
}

export function UpdateCrowdDialog({
  tenant,
  workflow,
  instanceId,
  onClose,
}: {
  tenant: string;
  workflow: WorkflowView;
  instanceId: string;
  onClose: () => void;
}) {
  const [crowd, setCrowd] = useState('');
  const op = useOperation(tenant, workflow.id);
  return (
    <Dialog title="Update the crowd of the running instance" onClose={onClose} testId="crowd-dialog">
      <div className="dialog-body">
        <CrowdPicker tenant={tenant} value={crowd} onChange={setCrowd} />
        <p className="muted small">New users join the entry step; users no longer in the crowd leave every step. No notifications are sent.</p>
        {op.error && <ErrorBox error={op.error} />}
        <button
          type="button"
          className="primary"
          disabled={!crowd || op.busy}
          onClick={() => void op.run(() => apiCall('POST', tenantPath(tenant, `/instances/${instanceId}/crowd`), { crowd })).then((ok) => ok && onClose())}
          data-testid="update-crowd-confirm"
        >
          Update crowd
        </button>
      </div>
    </Dialog>
  );
}

/** Moves the running instance to the saved version; users of removed steps must be mapped (the 409 says how many). */
export function ApplyVersionDialog({
  tenant,
  workflow,
  instanceId,
  runningVersion,
  onClose,
  onApplied,
}: {
  tenant: string;
  workflow: WorkflowView;
  instanceId: string;
  runningVersion: number | undefined;
  onClose: () => void;
  onApplied: (message: string) => void;
}) {
  const [stranded, setStranded] = useState<Record<string, number> | null>(null);
  const [mapping, setMapping] = useState<Record<string, string>>({});
  const op = useOperation(tenant, workflow.id);
  const steps = workflow.definition.steps.map((s) => s.name);
  async function apply() {
    const ok = await op.run(async () => {
      try {
        return await apiCall<{ procedureId: string }>('POST', tenantPath(tenant, `/instances/${instanceId}/workflow`), {
          version: workflow.version,
          ...(stranded ? { mapping } : {}),
        });
      } catch (caught) {
        const details = (caught as ApiError).details as { stranded?: Record<string, number> } | undefined;
        if ((caught as ApiError).status === 409 && details?.stranded) {
          setStranded(details.stranded);
          setMapping(Object.fromEntries(Object.keys(details.stranded).map((step) => [step, steps[0]])));
        }
        throw caught;
      }
    });
    if (ok) {
      const moved = Object.entries(mapping).filter(([step]) => stranded?.[step]);
      onApplied(
        `v${workflow.version} now runs${runningVersion ? ` (was v${runningVersion})` : ''}: users stayed in their steps` +
          (moved.length ? `; ${moved.map(([step, to]) => `${formatCount(stranded![step])} from “${step}” moved to “${to}”`).join(', ')}.` : '.'),
      );
      onClose();
    }
  }
  return (
    <Dialog
      title={`Apply v${workflow.version} to the running instance${runningVersion ? ` (now v${runningVersion})` : ''}`}
      onClose={onClose}
      testId="apply-dialog"
    >
      <div className="dialog-body">
        <p className="muted small">Users stay in the step of the same name. Users in steps this version removes must go somewhere.</p>
        {stranded &&
          Object.entries(stranded).map(([step, count]) => (
            <label key={step}>
              {formatCount(count)} users in removed step “{step}” move to
              <select value={mapping[step]} onChange={(e) => setMapping({ ...mapping, [step]: e.target.value })}>
                {steps.map((s) => (
                  <option key={s}>{s}</option>
                ))}
              </select>
            </label>
          ))}
        {op.error && <ErrorBox error={op.error} />}
        <button type="button" className="primary" disabled={op.busy} onClick={() => void apply()} data-testid="apply-confirm">
          {stranded ? 'Apply with this mapping' : 'Apply'}
        </button>
      </div>
    </Dialog>
  );
}
