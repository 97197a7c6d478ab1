'use client';
import { useState, type FormEvent } from 'react';
import type { DeliveryView } from '../server/webhooks/deliveries';
import type { DestinationView } from '../server/webhooks/destinations';
import { SecretShownOnce, useAction } from './actions';
import { apiCall, apiGet, tenantPath } from './api';
import { ListTable, type Column } from './list-table';
import { QuietHoursForm } from './quiet-hours';
import { listOf } from './model';
import { invalidate, useQuery } from './query';
import { ErrorBox, formatCount } from './ui';

// Webhook destinations of the tenant: add one (the generated signing secret is shown once), see each one's delivery
// log refreshed every 2 s, replay a delivered or failed delivery, delete a destination; and the tenant's quiet hours
// (./quiet-hours.tsx).

const REFRESH_MS = 2000;
const destinationsKey = (tenant: string) => `webhooks:${tenant}`;
const deliveriesKey = (tenant: string, name: string) => `webhook-deliveries:${tenant}:${name}`;
const when = (iso: string | null) => (iso ? new Date(iso).toLocaleString() : '—');
const webhookPath = (tenant: string, name: string, rest = '') => tenantPath(tenant, `/webhooks/${encodeURIComponent(name)}${rest}`);

function CreateDestinationForm({ tenant }: { tenant: string }) {
  const [name, setName] = useState('');
  const [url, setUrl] = useState('');
  const [batchSize, setBatchSize] = useState('10000');
  const [allNotifications, setAllNotifications] = useState(false);
  const [created, setCreated] = useState<(DestinationView & { secret?: string }) | null>(null);
  const action = useAction();

  function create(event: FormEvent) {
    event.preventDefault();
    setCreated(null);
    void action.run(async () => {
      setCreated(await apiCall('POST', tenantPath(tenant, '/webhooks'), { name, url, batchSize: Number(batchSize), allNotifications }));
      setName('');
      setUrl('');
      await invalidate(destinationsKey(tenant));
    });
  }

  return (
    <form onSubmit={create} className="card" data-testid="webhook-form">
      <h2>New destination</h2>
      <div className="row">
        <label>
          Name
          <input value={name} onChange={(e) => setName(e.target.value)} required maxLength={100} data-testid="webhook-name" />
        </label>
        <label>
          URL
          <input
            type="url"
            value={url}
            onChange={(e) => setUrl(e.target.value)}
            required
            placeholder="https://example.com/hooks/crowdflow"
            data-testid="webhook-url"
          />
        </label>
        <label>
          User ids per request
          <input type="number" min={1} max={100000} value={batchSize} onChange={(e) => setBatchSize(e.target.value)} data-testid="webhook-batch" />
        </label>
        <label className="inline">
          <input type="checkbox" checked={allNotifications} onChange={(e) => setAllNotifications(e.target.checked)} data-testid="webhook-all" /> every move of
          the tenant
        </label>
        <button type="submit" className="primary" disabled={!name.trim() || !url.trim()} data-testid="webhook-create">
          Add destination
        </button>
      </div>
      {created?.secret && (
        <SecretShownOnce secret={created.secret} testId="webhook-secret">
          Destination “{created.name}” added. Steps send users to it with the enter action <code>{created.actionTag}</code>. Copy the signing secret now: it is
          shown only once.
        </SecretShownOnce>
      )}
      {action.error && <ErrorBox error={action.error} />}
    </form>
  );
}

function DeliveryLog({ tenant, name }: { tenant: string; name: string }) {
  const deliveries = useQuery<DeliveryView[]>(
    deliveriesKey(tenant, name),
    async () => listOf<DeliveryView>(await apiGet(webhookPath(tenant, name, '/deliveries?limit=100')), 'deliveries'),
    {
      refetchMs: REFRESH_MS,
    },
  );
  const action = useAction();

  function replay(delivery: DeliveryView) {
    void action.run(async () => {
      await apiCall('POST', webhookPath(tenant, name, `/deliveries/${encodeURIComponent(delivery.id)}/replay`));
      await invalidate(deliveriesKey(tenant, name));
    });
  }

  const columns: Column<DeliveryView>[] = [
    { header: 'Delivery', cell: (d) => <code className="small">{d.id}</code> },
    {
      header: 'Status',
      cell: (d) => <span className={`badge ${d.status === 'failed' ? 'failed' : d.status === 'pending' ? 'running' : ''}`}>{d.status}</span>,
    },
    {
      header: 'Users',
      cell: (d) =>
        d.lost ? (
          <span
            className="badge failed"
            title="Journal retention deleted these moves before they were delivered; the receiver was told they may be missing"
            data-testid="delivery-lost"
          >
            moves {d.lost.after + 1}–{d.lost.through} lost
          </span>
        ) : (
          formatCount(d.users)
        ),
    },
    { header: 'Attempts', cell: (d) => d.attempts + (d.replays ? ` (replay ${d.replays})` : '') },
    {
      header: 'Last answer',
      // The receiver's own words (lastResponse) reach the studio: it signs in as the admin.
      cell: (d) => [d.lastError ?? (d.lastStatus === null ? null : `HTTP ${d.lastStatus}`), d.lastResponse].filter(Boolean).join(': ') || '—',
      className: 'small clip',
    },
    { header: 'Created', cell: (d) => when(d.createdAt), className: 'muted' },
    {
      header: '',
      cell: (d) =>
        d.status !== 'pending' && (
          <button type="button" className="link" onClick={() => replay(d)} data-testid="delivery-replay">
            Replay
          </button>
        ),
      className: 'actions',
    },
  ];
  return (
    <section className="card stack" aria-label={`Deliveries of ${name}`}>
      <h2>Deliveries of “{name}”</h2>
      {action.error && <ErrorBox error={action.error} />}
      <ListTable
        query={deliveries}
        what="deliveries"
        empty={<>No deliveries yet. Users entering a step whose enter action is webhook:{name} are delivered here.</>}
        columns={columns}
        rowKey={(d) => d.id}
        testId="delivery-table"
        rowTestId="delivery-row"
      />
    </section>
  );
}

export function WebhooksPage({ tenant }: { tenant: string }) {
  const destinations = useQuery<DestinationView[]>(destinationsKey(tenant), async () =>
    listOf<DestinationView>(await apiGet(tenantPath(tenant, '/webhooks')), 'destinations'),
  );
  const [open, setOpen] = useState<string | null>(null);
  const action = useAction();

  function remove(destination: DestinationView) {
    if (!window.confirm(`Delete webhook destination "${destination.name}" and its delivery log?`)) return;
    void action.run(async () => {
      await apiCall('DELETE', webhookPath(tenant, destination.name));
      if (open === destination.name) setOpen(null);
      await invalidate(destinationsKey(tenant));
    });
  }

  const columns: Column<DestinationView>[] = [
    {
      header: 'Name',
      cell: (d) => (
        <button
          type="button"
          className="link"
          onClick={() => setOpen(open === d.name ? null : d.name)}
          aria-expanded={open === d.name}
          data-testid="webhook-open"
        >
          {d.name}
        </button>
      ),
    },
    { header: 'URL', cell: (d) => <code className="small">{d.url}</code> },
    { header: 'Receives', cell: (d) => (d.allNotifications ? 'every move' : <code>{d.actionTag}</code>) },
    { header: 'Ids per request', cell: (d) => formatCount(d.batchSize) },
    {
      header: '',
      className: 'actions',
      cell: (d) => (
        <button type="button" className="link danger" onClick={() => remove(d)} data-testid="webhook-delete">
          Delete
        </button>
      ),
    },
  ];

  return (
    <section className="stack">
      <h1>Webhooks</h1>
      <CreateDestinationForm tenant={tenant} />
      {action.error && <ErrorBox error={action.error} />}
      <ListTable
        query={destinations}
        what="webhook destinations"
        empty="No destinations yet. Add one above, then give a step the enter action webhook:<name>."
        columns={columns}
        rowKey={(d) => d.name}
        testId="webhook-table"
        rowTestId="webhook-row"
        rowProps={(d) => ({ 'data-webhook': d.name, className: open === d.name ? 'selected-row' : undefined })}
      />
      {open && <DeliveryLog tenant={tenant} name={open} />}
      <QuietHoursForm tenant={tenant} />
    </section>
  );
}
