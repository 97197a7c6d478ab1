'use client';
import { NodeToolbar, Position } from '@xyflow/react';
import { useEffect, useRef, useState, type FormEvent, type KeyboardEvent } from 'react';
import { type ApiError, API_ROOT, apiGet, pathSegment, tenantPath } from '../api';
import type { WhereIsUser } from '../model';
import { ErrorBox } from '../ui';
import { useWorkflows } from '../workflows';
import { asOfParameter, momentInWords, useAsOf } from './as-of';
import { useCanvasInfo, useCounts } from './context';
import { ExportColumnsForm, SaveCrowdForm } from './step-export-forms';
import { moveInWords } from './user-path';

/**
 * A step's menu: export its users (and, with a goal, those who converted from it; with exit criteria, those who exited
 * early from it), with profile columns as CSV or
 * Parquet, save them as a new crowd, look at the first ones, find where a user is. The server names each download
 * (`journey-step-date.csv`); the links only ask for one. The panel is a node toolbar: drawn beside the step at the
 * screen's scale, not the canvas's, so its words stay readable at a fitted zoom and it never covers the step's count.
 * It carries the step's `data-step` too, so what is in it is found as the step's.
 */
export function StepMenu({ stepName }: { stepName: string }) {
  const { tenant, instanceId, workflowId } = useCanvasInfo();
  // the counts carry `converted` exactly when the instance's version has a goal
  const counts = useCounts();
  const hasGoal = counts?.converted !== undefined;
  // and `exited` exactly when it has exit criteria
  const hasExit = counts?.exited !== undefined;
  const { asOf } = useAsOf();
  const workflows = useWorkflows(tenant);
  const workflowName = (id: string) => workflows.data?.find((w) => w.id === id)?.name ?? id;
  const [open, setOpen] = useState(false);
  const [firstUsers, setFirstUsers] = useState<number[] | null>(null);
  const [where, setWhere] = useState<WhereIsUser | null>(null);
  const [user, setUser] = useState('');
  const [error, setError] = useState<ApiError | null>(null);
  const [form, setForm] = useState<'columns' | 'crowd' | null>(null);
  const [opensUp, setOpensUp] = useState(false);
  const menuButton = useRef<HTMLButtonElement>(null);
  const viewFirstButton = useRef<HTMLButtonElement>(null);
  const firstItem = useRef<HTMLAnchorElement>(null);
  // Opened, the menu takes the focus (its first item), as a menu does: its panel is elsewhere in the page.
  useEffect(() => {
    if (open) firstItem.current?.focus();
  }, [open]);
  if (!instanceId) return null;

  /**
   * Escape closes what the focus is in and gives the focus back to what opened it, as a dialog does: the first users'
   * popover (from its button, back to it), else the menu (back to the menu's button).
   */
  function closeOnEscape(event: KeyboardEvent) {
    if (event.key !== 'Escape' || !open) return;
    event.stopPropagation();
    if (firstUsers && event.target === viewFirstButton.current) return setFirstUsers(null);
    setOpen(false);
    menuButton.current?.focus();
  }
  // With a past moment shown (as-of.tsx), every export is of the users at the step then.
  const exportUrl = (format: string, limit?: number, users?: 'converted' | 'exited') =>
    `${API_ROOT}${tenantPath(tenant, `/instances/${instanceId}/steps/${pathSegment(stepName)}/export`)}?format=${format}${limit ? `&limit=${limit}` : ''}${users ? `&users=${users}` : ''}${asOfParameter(asOf)}`;

  async function showFirst() {
    setError(null);
    try {
      const body = await apiGet<number[] | { users: number[] }>(exportUrl('json', 20).slice(API_ROOT.length));
      setFirstUsers(Array.isArray(body) ? body : body.users);
    } catch (caught) {
      setError(caught as ApiError);
    }
  }

  async function find(event: FormEvent) {
    event.preventDefault();
    setError(null);
    // the answer for another user must never sit beside this one's error
    setWhere(null);
    try {
      setWhere(await apiGet<WhereIsUser>(tenantPath(tenant, `/users/${pathSegment(user.trim())}`)));
    } catch (caught) {
      setError(caught as ApiError);
    }
  }

  return (
    <span className="step-menu nodrag nopan" onKeyDown={closeOnEscape}>
      <button
        ref={menuButton}
        type="button"
        className="icon menu-button"
        aria-label={`Menu of step ${stepName}`}
        data-testid="step-menu"
        onClick={() => {
          setOpensUp(lowOnCanvas(menuButton.current));
          setOpen(!open);
          setFirstUsers(null);
          setForm(null);
        }}
      >
        ⋯
      </button>
      <NodeToolbar isVisible={open} position={opensUp ? Position.Top : Position.Bottom} align="end" offset={6} data-step={stepName}>
        {open && (
          <div className="menu step-menu-panel nodrag nopan" role="menu">
            {asOf && (
              <p className="as-of-note small" data-testid="export-as-of">
                Users as of {momentInWords(asOf)} (past)
              </p>
            )}
            <a ref={firstItem} href={exportUrl('csv')} download data-testid="export-csv">
              Export users (CSV)
            </a>
            <a href={exportUrl('roaring')} download data-testid="export-roaring">
              Export users (roaring)
            </a>
            {hasGoal && (
              <a href={exportUrl('csv', undefined, 'converted')} download data-testid="export-converted">
                Export converted users (CSV)
              </a>
            )}
            {hasExit && (
              <a href={exportUrl('csv', undefined, 'exited')} download data-testid="export-exited">
                Export users who exited early (CSV)
              </a>
            )}
            <button type="button" onClick={() => setForm(form === 'columns' ? null : 'columns')} aria-expanded={form === 'columns'}>
              Export with columns…
            </button>
            {form === 'columns' && <ExportColumnsForm tenant={tenant} instanceId={instanceId} stepName={stepName} hasGoal={hasGoal} asOf={asOf} />}
            {/* A crowd is saved from the users there now: not offered while a past moment is shown. */}
            {!asOf && (
              <button type="button" onClick={() => setForm(form === 'crowd' ? null : 'crowd')} aria-expanded={form === 'crowd'}>
                Save as crowd…
              </button>
            )}
            {form === 'crowd' && !asOf && <SaveCrowdForm tenant={tenant} instanceId={instanceId} stepName={stepName} hasGoal={hasGoal} />}
            <button ref={viewFirstButton} type="button" onClick={() => void showFirst()} aria-expanded={firstUsers !== null}>
              View first users
            </button>
            {firstUsers && (
              <p className="small" data-testid="first-users" role="status">
                {firstUsers.length ? firstUsers.join(', ') : 'No users in this step.'}
              </p>
            )}
            <form onSubmit={find} className="row">
              <input aria-label="User ID" placeholder="User ID" value={user} onChange={(e) => setUser(e.target.value)} inputMode="numeric" />
              <button type="submit">Find</button>
            </form>
            {where && (
              <div className="small" data-testid="where-user">
                {where.instances.length === 0
                  ? `User ${where.user} is in no running instance.`
                  : where.instances.map((i) => (
                      <div key={i.instanceId} data-testid="where-instance">
                        {i.instanceId === instanceId
                          ? 'In this instance'
                          : i.workflowId === workflowId
                            ? `In another instance of this workflow (${i.instanceId.slice(0, 10)})`
                            : `In “${workflowName(i.workflowId)}”`}
                        : user {where.user} is in “{i.step}”
                      </div>
                    ))}
                {where.recentMoves.length > 0 && <div className="muted">Recent moves:</div>}
                {where.recentMoves.slice(0, 5).map((m) => (
                  <div key={m.seq} className="muted" data-testid="where-move">
                    {moveInWords(m.fromStep, m.toStep)} · {m.instanceId === instanceId ? 'this instance' : `instance ${m.instanceId.slice(0, 10)}`} ·{' '}
                    {new Date(m.time).toLocaleString()}
                  </div>
                ))}
              </div>
            )}
            {error && <ErrorBox error={error} />}
          </div>
        )}
      </NodeToolbar>
    </span>
  );
}

/** A menu opened in the lower half of the canvas opens above the step, so its longer forms are not cut off at the bottom. */
function lowOnCanvas(button: HTMLElement | null): boolean {
  const canvas = button?.closest('.react-flow')?.getBoundingClientRect();
  const at = button?.getBoundingClientRect();
  return canvas !== undefined && at !== undefined && at.bottom > canvas.top + canvas.height / 2;
}
