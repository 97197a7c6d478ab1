'use client';
import { useState, type ReactNode } from 'react';
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

/** A secret the server showed this once (an API key, a webhook signing secret): what it is for, then the secret. */
export function SecretShownOnce({ secret, testId, children }: { secret: string; testId: string; children: ReactNode }) {
  return (
    <div className="ok-text" role="status" data-testid={`${testId}-box`}>
      <p>{children}</p>
      <code data-testid={testId}>{secret}</code>
    </div>
  );
}
