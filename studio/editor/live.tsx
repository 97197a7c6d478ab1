'use client';
import { useState } from 'react';
import { apiCall, apiGet, tenantPath } from '../api';
import type { Counts, InstanceView, WorkflowView } from '../model';
import { useQuery } from '../query';
import { ErrorBox, formatCount } from '../ui';
import { ApplyVersionDialog, StartDialog, UpdateCrowdDialog } from './instance-dialogs';
import { HistoryDialog, VersionsDialog, type HistoryView } from './history';
import { useOperation } from './operations';
import { CountsChartDialog, CountsHistoryFeed } from './counts-chart';
import { liveCountsKey } from './context';
import { FunnelDialog, PathsDialog } from './journey-flow';

// The editor toolbar's instance controls: running state and version, start, apply, update crowd, stop, history.
type DialogName = 'start' | 'crowd' | 'apply' | 'history' | 'versions' | 'chart' | 'paths' | 'funnel' | null;

export function LiveToolbar({
  tenant,
  workflow,
  dirty,
  onHistory,
}: {
  tenant: string;
  workflow: WorkflowView;
  dirty: boolean;
  onHistory: (h: HistoryView) => void;
}) {
  const [dialog, setDialog] = useState<DialogName>(null);
  const stop = useOperation(tenant, workflow.id);
  const running = workflow.running;
  const instance = useQuery<InstanceView>(
    running ? `instance:${tenant}:${running.instanceId}` : null,
    () => apiGet(tenantPath(tenant, `/instances/${running!.instanceId}`)),
    { refetchMs: 5000 },
  );
  // The live counts (SSE, kept by the editor): users who entered after the start (event-triggered entry, crowd
  // updates) are in them, not in the start's userCount.
  const live = useQuery<Counts>(running ? liveCountsKey(tenant, workflow.id) : null).data;
  const behind = running && instance.data && instance.data.version !== workflow.version;
  const [applied, setApplied] = useState<string | null>(null);
  return (
    <>
      {running ? (
        <>
          <span className="badge running" data-testid="running-badge" title="The version the running instance follows, and the users in it now">
            running{instance.data ? ` v${instance.data.version}` : ''} · {formatCount(live?.total ?? running.userCount)} users
          </span>
          {behind && (
            <button type="button" onClick={() => setDialog('apply')} data-testid="apply-version">
              Apply v{workflow.version} to running
            </button>
          )}
          <button type="button" onClick={() => setDialog('crowd')} data-testid="update-crowd">
            Update crowd
          </button>
          <button type="button" onClick={() => setDialog('chart')} data-testid="chart">
            Chart
          </button>
          <button type="button" onClick={() => setDialog('paths')} data-testid="paths" title="The moves between steps, as a Sankey">
            Paths
          </button>
          <button type="button" onClick={() => setDialog('funnel')} data-testid="funnel" title="Users who passed through chosen steps in order">
            Funnel
          </button>
          <CountsHistoryFeed tenant={tenant} instanceId={running.instanceId} />
          <button
            type="button"
            className="danger"
            disabled={stop.busy}
            onClick={() =>
              window.confirm('Stop this instance? Its counts are kept in the history.') &&
              void stop.run(() => apiCall('POST', tenantPath(tenant, `/instances/${running.instanceId}/stop`)))
            }
            data-testid="stop"
          >
            {stop.busy ? 'Stopping…' : 'Stop'}
          </button>
        </>
      ) : (
        <button
          type="button"
          className="primary"
          disabled={dirty}
          title={dirty ? 'Save first: only a saved, valid version can start' : ''}
          onClick={() => setDialog('start')}
          data-testid="start"
        >
          Start…
        </button>
      )}
      <button type="button" onClick={() => setDialog('versions')} data-testid="versions">
        Versions
      </button>
      <button type="button" onClick={() => setDialog('history')}>
        History
      </button>
      {applied && (
        <span className="notice ok-text" role="status" data-testid="apply-notice">
          {applied}
        </span>
      )}
      {stop.error && <ErrorBox error={stop.error} />}
      {dialog === 'start' && <StartDialog tenant={tenant} workflow={workflow} onClose={() => setDialog(null)} />}
      {dialog === 'crowd' && running && (
        <UpdateCrowdDialog tenant={tenant} workflow={workflow} instanceId={running.instanceId} onClose={() => setDialog(null)} />
      )}
      {dialog === 'apply' && running && (
        <ApplyVersionDialog
          tenant={tenant}
          workflow={workflow}
          instanceId={running.instanceId}
          runningVersion={instance.data?.version}
          onClose={() => setDialog(null)}
          onApplied={setApplied}
        />
      )}
      {dialog === 'chart' && running && (
        <CountsChartDialog tenant={tenant} instanceId={running.instanceId} steps={workflow.definition.steps} live={live} onClose={() => setDialog(null)} />
      )}
      {dialog === 'paths' && running && <PathsDialog tenant={tenant} instanceId={running.instanceId} onClose={() => setDialog(null)} />}
      {dialog === 'funnel' && running && (
        <FunnelDialog tenant={tenant} instanceId={running.instanceId} steps={workflow.definition.steps} onClose={() => setDialog(null)} />
      )}
      {dialog === 'versions' && <VersionsDialog tenant={tenant} workflow={workflow} onPick={onHistory} onClose={() => setDialog(null)} />}
      {dialog === 'history' && <HistoryDialog tenant={tenant} workflow={workflow} onPick={onHistory} onClose={() => setDialog(null)} />}
    </>
  );
}
