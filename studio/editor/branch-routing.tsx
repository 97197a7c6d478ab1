'use client';
import { useMemo } from 'react';
import { branchRouting } from '../../core/model/branch-routing';

const WORDS = {
  entry: {
    text: '↳ routes on entry',
    title:
      'No condition reads the event, so users are sent down the first branch that matches as soon as they enter this step. ' +
      'Those no branch matches wait here.',
  },
  event: {
    text: '◌ waits for an event',
    title: 'A condition reads the event, so users wait here and the branches are tried on each of their events, in order.',
  },
} as const;

/** Says on a branch step when it decides: as users enter it, or on their events (docs/journeys.md "Semantics"). */
export function BranchRouting({ conditions }: { conditions: string[] }) {
  // Keyed by the texts, not the array (a new one on every render): each parse runs once per edit of a condition.
  const key = conditions.join('\u0000');
  const routing = useMemo(() => branchRouting(key.split('\u0000')), [key]);
  if (routing === null) return null; // a condition that does not compile is reported as a problem already
  const { text, title } = WORDS[routing];
  return (
    <div className="step-routing" data-testid="step-routing" data-routing={routing} title={title}>
      {text}
    </div>
  );
}
