'use client';
import Link from 'next/link';
import { useState, type ReactNode } from 'react';
import type { DestinationView } from '../../server/webhooks/destinations';
import { apiGet, tenantPath } from '../api';
import { listOf } from '../model';
import { useQuery } from '../query';
import { useCanvasInfo } from './context';
import { Text } from './inspector-text';

// A step's "On enter" action: nothing, one of the tenant's webhook destinations (the tag `webhook:<name>` sends the
// users entering the step there), or a free action tag that integrations read on the notifications. A marketer picks
// a webhook from those configured instead of typing its tag; with none configured, the picker says so and links to
// the page that creates one.

/** The enter-action tag of a webhook destination (server/webhooks/destinations.ts WEBHOOK_TAG_PREFIX, not importable here). */
export const WEBHOOK_PREFIX = 'webhook:';

export const webhookOf = (action: string | undefined): string | null => (action?.startsWith(WEBHOOK_PREFIX) ? action.slice(WEBHOOK_PREFIX.length) : null);

/** The tenant's webhook destinations, under the key the webhooks page uses (one cache for both). */
export function useWebhooks(tenant: string) {
  return useQuery<DestinationView[]>(tenant ? `webhooks:${tenant}` : null, async () =>
    listOf<DestinationView>(await apiGet(tenantPath(tenant, '/webhooks')), 'destinations'),
  );
}

const TAG = 'tag';

export function EnterActionField({ value, onChange }: { value: string | undefined; onChange: (value: string | undefined) => void }) {
  const { tenant } = useCanvasInfo();
  const webhooks = useWebhooks(tenant);
  const [wantsTag, setWantsTag] = useState(false);
  const webhook = webhookOf(value);
  const choice = webhook !== null ? (value ?? '') : value || wantsTag ? TAG : '';
  const known = webhooks.data?.map((d) => d.name) ?? [];
  const missing = webhook !== null && webhooks.data !== undefined && !known.includes(webhook);
  const choose = (picked: string) => {
    setWantsTag(picked === TAG);
    if (picked === TAG) onChange(webhook === null ? value : undefined);
    else onChange(picked || undefined);
  };
  return (
    <>
      <label>
        On enter
        <select value={choice} onChange={(e) => choose(e.target.value)} data-testid="enter-action-select" aria-invalid={missing || undefined}>
          <option value="">Nothing</option>
          {known.length > 0 && (
            <optgroup label="Send the users who enter to a webhook">
              {webhooks.data?.map((d) => (
                <option key={d.name} value={WEBHOOK_PREFIX + d.name}>
                  Webhook “{d.name}” ({hostOf(d.url)})
                </option>
              ))}
            </optgroup>
          )}
          {missing && <option value={value}>Webhook “{webhook}” (not configured)</option>}
          <option value={TAG}>An action tag for integrations…</option>
        </select>
      </label>
      {missing && (
        <p className="field-error" data-testid="enter-action-missing">
          This tenant has no webhook “{webhook}”: pick one of its webhooks, or <WebhooksLink tenant={tenant}>create it</WebhooksLink>.
        </p>
      )}
      {webhooks.data?.length === 0 && (
        <p className="muted small" data-testid="no-webhooks">
          No webhooks yet. <WebhooksLink tenant={tenant}>Create a webhook</WebhooksLink> to send the users entering a step to another system.
        </p>
      )}
      {choice === TAG && (
        <Text label="Action tag (on the notifications)" value={value} onChange={onChange} placeholder="e.g. send-welcome-email" testId="enter-action-tag" />
      )}
    </>
  );
}

function WebhooksLink({ tenant, children }: { tenant: string; children: ReactNode }) {
  return (
    <Link href={`/t/${encodeURIComponent(tenant)}/webhooks`} data-testid="create-webhook-link">
      {children}
    </Link>
  );
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}
