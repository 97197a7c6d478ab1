'use client';
import { useRef, useState, type ReactNode } from 'react';
import type { ApiError } from './api';

// What the list pages (keys, webhooks, crowds) share: a change the user asked for whose failure is shown, not
// thrown, and a secret the server returns once.

/** Runs changes the user asked for; the last one's failure is in `error` (for an ErrorBox), cleared by the next run. */
export function useAction() {
  const [error, setError] = useState<ApiError | null>(null);
  async function run(change: () => Promise<unknown>): Promise<void> {
    setError(null);
    try {
      await change();
    } catch (caught) {
      setError(caught as ApiError);
    }
  }
  return { error, run };
}

/**
 * A secret the server showed this once (an API key, a webhook signing secret): what it is for, the secret and a Copy
 * button. "Copied" is said in the box, a live region, so a screen reader hears it; where the browser refuses the
 * clipboard (a page not served from localhost or HTTPS) the secret is selected for Ctrl+C instead.
 */
export function SecretShownOnce({ secret, testId, children }: { secret: string; testId: string; children: ReactNode }) {
  // the secret last copied, so a new secret shown in the same box is not said to be copied
  const [copied, setCopied] = useState<string | null>(null);
  const [refused, setRefused] = useState(false);
  const secretText = useRef<HTMLElement>(null);

  async function copy() {
    try {
      await navigator.clipboard.writeText(secret);
      setCopied(secret);
      setRefused(false);
    } catch {
      if (secretText.current) window.getSelection()?.selectAllChildren(secretText.current);
      setRefused(true);
    }
  }

  return (
    <div className="ok-text secret-once" role="status" data-testid={`${testId}-box`}>
      <p>{children}</p>
      <div className="secret-row">
        <code ref={secretText} data-testid={testId}>
          {secret}
        </code>
        <button type="button" onClick={() => void copy()} data-testid={`${testId}-copy`}>
          {copied === secret ? '✓ Copied' : 'Copy'}
        </button>
        <span className="small" data-testid={`${testId}-copied`}>
          {copied === secret ? 'Copied to the clipboard.' : refused ? 'The browser would not copy it: the secret is selected, press Ctrl+C.' : ''}
        </span>
      </div>
    </div>
  );
}
