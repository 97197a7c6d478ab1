'use client';
import { useEffect } from 'react';

// Leaving a page with unsaved work asks first, wherever the leaving starts: a link in the header, the
// "← Workflows" link, the tenant picker, sign-out (in-app), or closing and reloading the tab (the browser's
// own beforeunload prompt). A page with unsaved work registers its question here while it has some.

let question: string | null = null;

export function setLeaveQuestion(text: string | null) {
  question = text;
}

/** True when there is nothing to lose, or the user agreed to leave. */
export function confirmLeave(): boolean {
  return question === null || window.confirm(question);
}

/** Registers the question while `unsaved` holds; also guards reloads and closing the tab. */
export function useLeaveGuard(unsaved: boolean, text: string) {
  useEffect(() => {
    if (!unsaved) return;
    setLeaveQuestion(text);
    const onUnload = (event: BeforeUnloadEvent) => event.preventDefault();
    window.addEventListener('beforeunload', onUnload);
    return () => {
      setLeaveQuestion(null);
      window.removeEventListener('beforeunload', onUnload);
    };
  }, [unsaved, text]);
}

/**
 * Asks before in-app links navigate away. Runs in the capture phase on the document, before Next's
 * <Link> handler (React listens below the document), and cancels the click when the user stays.
 */
export function useLinkGuard() {
  useEffect(() => {
    const onClick = (event: MouseEvent) => {
      if (question === null || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
      const anchor = (event.target as Element | null)?.closest?.('a[href]') as HTMLAnchorElement | null;
      if (!anchor || anchor.target === '_blank' || anchor.hasAttribute('download')) return;
      const url = new URL(anchor.href, window.location.href);
      if (url.origin !== window.location.origin || url.pathname === window.location.pathname) return;
      if (!confirmLeave()) {
        event.preventDefault();
        event.stopPropagation();
      }
    };
    document.addEventListener('click', onClick, true);
    return () => document.removeEventListener('click', onClick, true);
  }, []);
}
