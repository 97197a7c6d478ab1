'use client';
import { useContext, useState, type FormEvent } from 'react';
import { type ApiError, apiCall, tenantPath } from '../api';
import type { PathPreview, PreviewEvent, PreviewHop } from '../model';
import { conditionSummary } from '../rules';
import { ErrorBox } from '../ui';
import { useCanvasInfo } from './context';
import { useEditor } from './store';
import { PathContext, type PathMark, type UserPath } from './user-path';

// "Preview a user's path": the steps a user WOULD go through now, from their profile, the crowds and the saved
// conditions, with events pretended, asked of POST …/workflows/{id}/preview-path (server/engine/preview.ts). Nobody
// moves. The steps are marked on the canvas (`would`, and `would-end` where the walk stops) and the way is said in
// words.

/**
 * Events typed as "purchase plan=pro, open": a comma between events, the event type first, then `field=value` pairs
 * of its data (numbers and true/false read as such).
 */
export function parsePretendedEvents(text: string): PreviewEvent[] {
  return text
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean)
    .map((part) => {
      const [type, ...pairs] = part.split(/\s+/);
      const data: Record<string, unknown> = {};
      for (const pair of pairs) {
        const at = pair.indexOf('=');
        if (at <= 0) continue;
        const raw = pair.slice(at + 1);
        data[pair.slice(0, at)] = raw === 'true' ? true : raw === 'false' ? false : raw !== '' && Number.isFinite(Number(raw)) ? Number(raw) : raw;
      }
      return Object.keys(data).length ? { type, data } : { type };
    });
}

/** The canvas marks of a preview: every step on the way, the last one most. */
export function previewMarks(preview: PathPreview): UserPath {
  const steps = new Map<string, PathMark>([[preview.start, 'would']]);
  for (const hop of preview.hops) steps.set(hop.to, 'would');
  steps.set(preview.end.step, 'would-end');
  return {
    kind: 'preview',
    user: preview.user,
    steps,
    edges: new Set(preview.hops.map((hop) => `${hop.from}->${hop.to}`)),
    moves: [],
    current: null,
    complete: true,
  };
}

/** Why the user would take a hop, in words. */
function hopWords(hop: PreviewHop, events: PreviewEvent[]): string {
  switch (hop.by) {
    case 'next':
      return 'at once';
    case 'branch':
      return `${hop.event === undefined ? 'at once' : `on the event “${events[hop.event]?.type ?? hop.event + 1}”`}: ${conditionSummary(hop.condition ?? '')}`;
    case 'ttl':
      return `re-checked after ${hop.after} with no event: ${conditionSummary(hop.condition ?? '')}`;
    case 'timeout':
      return `after ${hop.after} with no further event (timeout)`;
    case 'split':
      return `split path ${(hop.path ?? 0) + 1} (${hop.percent}%), picked for this user`;
    case 'delay':
      return `after waiting ${hop.after}`;
    case 'timer':
      return hop.condition ? `when the timer fires, as ${conditionSummary(hop.condition)} holds now` : 'when the timer fires';
  }
}

function endWords(preview: PathPreview, events: PreviewEvent[]): string {
  const step = `“${preview.end.step}”`;
  switch (preview.end.reason) {
    case 'exit':
      return `Then leaves the journey at ${step}.`;
    case 'exited': {
      const event = preview.end.event === undefined ? null : events[preview.end.event]?.type;
      return `Then exits early at ${step}: ${event ? `the event “${event}” meets` : 'they meet'} the journey's exit criteria.`;
    }
    case 'waits-for-event':
      return `Then waits in ${step} for an event that one of its branches takes.`;
    case 'waits-for-timer':
      return `Then waits in ${step}: the timer's condition is false for this user now.`;
    case 'loop':
      return `Then goes round back to ${step} again and again.`;
    case 'hop-limit':
      return `Stopped at ${step} after ${preview.hops.length} moves.`;
  }
}

export function PathPreviewPanel() {
  const { tenant, workflowId, readOnly } = useCanvasInfo();
  const { path, setPath } = useContext(PathContext);
  const dirty = useEditor((s) => s.dirty);
  const [user, setUser] = useState('');
  const [eventsText, setEventsText] = useState('');
  const [answer, setAnswer] = useState<{ preview: PathPreview; events: PreviewEvent[] } | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const [asking, setAsking] = useState(false);
  if (readOnly) return null;
  const shown = path?.kind === 'preview' ? answer : null;

  async function ask(event: FormEvent) {
    event.preventDefault();
    setError(null);
    setProblem(null);
    if (!/^\d{1,10}$/.test(user.trim()) || Number(user.trim()) > 4_294_967_295) {
      setProblem('A user ID is a whole number from 0 to 4294967295, e.g. 42.');
      if (path?.kind === 'preview') setPath(null);
      return;
    }
    setAsking(true);
    const events = parsePretendedEvents(eventsText);
    try {
      const body = { user: Number(user.trim()), ...(events.length ? { events } : {}) };
      const preview = await apiCall<PathPreview>('POST', tenantPath(tenant, `/workflows/${encodeURIComponent(workflowId)}/preview-path`), body);
      setAnswer({ preview, events });
      setPath(previewMarks(preview));
    } catch (caught) {
      setAnswer(null);
      if (path?.kind === 'preview') setPath(null);
      setError(caught as ApiError);
    } finally {
      setAsking(false);
    }
  }

  return (
    <section className="user-path" aria-labelledby="path-preview-title" data-testid="path-preview">
      <h3 id="path-preview-title">Preview a user’s path</h3>
      <p className="muted small">Where a user would go now, from their profile, crowds and the conditions. Nobody moves.</p>
      <form onSubmit={ask} className="path-preview-form">
        <input
          aria-label="User ID to preview"
          placeholder="User ID, e.g. 42"
          inputMode="numeric"
          value={user}
          onChange={(e) => setUser(e.target.value)}
          data-testid="path-preview-user"
        />
        <input
          aria-label="Events to pretend (optional)"
          placeholder="Events to pretend, e.g. purchase plan=pro, open"
          value={eventsText}
          onChange={(e) => setEventsText(e.target.value)}
          data-testid="path-preview-events"
        />
        <div className="row">
          <button type="submit" disabled={!user.trim() || asking} data-testid="path-preview-submit">
            {asking ? 'Previewing…' : 'Preview path'}
          </button>
          {shown && (
            <button type="button" className="link" onClick={() => setPath(null)} data-testid="path-preview-clear">
              Clear
            </button>
          )}
        </div>
      </form>
      {dirty && <p className="muted small">Previews the saved version: save to preview your changes.</p>}
      {problem && (
        <p className="field-error" role="alert" data-testid="path-preview-problem">
          {problem}
        </p>
      )}
      {error && <ErrorBox error={error} />}
      {shown && <PreviewInWords preview={shown.preview} events={shown.events} />}
    </section>
  );
}

function PreviewInWords({ preview, events }: { preview: PathPreview; events: PreviewEvent[] }) {
  const unused = events.length - preview.eventsUsed;
  return (
    <div className="small" role="status">
      <p data-testid="path-preview-summary">
        {preview.startsFrom === 'current'
          ? `User ${preview.user} is in “${preview.start}” now.`
          : `From the entry step “${preview.start}”, as if user ${preview.user} entered now.`}
      </p>
      <ol className="user-path-moves">
        {preview.hops.map((hop, i) => (
          <li key={i} data-testid="path-preview-hop">
            {hop.from} → {hop.to} <span className="muted">· {hopWords(hop, events)}</span>
          </li>
        ))}
      </ol>
      <p data-testid="path-preview-end">{endWords(preview, events)}</p>
      {unused > 0 && (
        <p className="muted" data-testid="path-preview-unused">
          {unused === 1 ? '1 pretended event was' : `${unused} pretended events were`} not needed: no step waited for {unused === 1 ? 'it' : 'them'}.
        </p>
      )}
      {preview.tooCostly.length > 0 && <p className="muted">Some conditions were too costly to check for this user and count as false.</p>}
    </div>
  );
}
