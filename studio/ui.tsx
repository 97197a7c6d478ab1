'use client';
import { useEffect, useRef, type ReactNode, type SyntheticEvent } from 'react';
import type { ApiError } from './api';

export function Loading({ what }: { what: string }) {
  return (
    <p className="state state-loading" role="status">
      Loading {what}…
    </p>
  );
}

export function ErrorBox({ error, onRetry }: { error: ApiError | Error | string; onRetry?: () => void }) {
  const message = typeof error === 'string' ? error : error.message;
  const code = typeof error === 'object' && 'code' in error ? (error as ApiError).code : undefined;
  return (
    <div className="state state-error" role="alert" data-testid="error">
      <strong>{message}</strong>
      {code && <span className="muted"> ({code})</span>}
      {onRetry && (
        <button type="button" className="link" onClick={onRetry}>
          Try again
        </button>
      )}
    </div>
  );
}

export function Empty({ children }: { children: ReactNode }) {
  return <div className="state state-empty">{children}</div>;
}

/** The loading, error and empty states of a list fetched with useQuery. */
export function ListStates({
  query,
  what,
  empty,
}: {
  query: { data?: unknown[]; error?: ApiError; loading: boolean; refetch: () => void };
  what: string;
  empty: ReactNode;
}) {
  return (
    <>
      {query.loading && !query.data && <Loading what={what} />}
      {query.error && <ErrorBox error={query.error} onRetry={query.refetch} />}
      {query.data?.length === 0 && <Empty>{empty}</Empty>}
    </>
  );
}

/**
 * A modal dialog on the native <dialog> element (focus trap and Escape for free). Escape and × unmount it before the
 * browser's own close could restore the focus, so it gives the focus back to the control that opened it (else the
 * focus lands on BODY and a keyboard user starts again from the top of the page).
 */
export function Dialog({ title, onClose, children, testId }: { title: string; onClose: () => void; children: ReactNode; testId?: string }) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const opener = document.activeElement;
    const dialog = ref.current;
    if (dialog && !dialog.open) dialog.showModal();
    return () => {
      if (opener instanceof HTMLElement && opener.isConnected) opener.focus();
    };
  }, []);
  return (
    // only this dialog's own close and cancel: React passes those of a dialog opened inside it up to this one too
    <dialog ref={ref} className="dialog" onClose={ownEvent(onClose)} onCancel={ownEvent(onClose)} data-testid={testId}>
      <header>
        <h2>{title}</h2>
        <button type="button" className="icon" aria-label="Close" onClick={onClose}>
          ×
        </button>
      </header>
      {children}
    </dialog>
  );
}

const ownEvent = (handler: () => void) => (event: SyntheticEvent) => event.target === event.currentTarget && handler();

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

export const formatCount = (n: number) => n.toLocaleString('en-US');

/** A step's share of the instance: one decimal, and "<0.1%" rather than a "0%" that reads as nobody. */
export function formatShare(count: number, total: number): string {
  if (total <= 0) return '';
  const percent = (count / total) * 100;
  if (count > 0 && percent < 0.1) return '<0.1%';
  return `${Math.round(percent * 10) / 10}%`;
}
