import { analyzeCondition } from '../conditions/analyze';

// When a branch step decides (docs/journeys.md "Semantics"): shared by the canvas, which says it on the step, the
// validator (a step that routes on entry moves users on at once, so it may not sit on a loop of such steps) and the
// engine (server/engine/runtime.ts reads the same `usesEvent` from the compiled conditions).

/**
 * `entry` when none of the conditions reads `event` (only `profile.*`, crowds, `user`, `now`): an event could not
 * change the answer, so users are routed as they enter the step. `event` when one does: users wait in the step and
 * the branches are tried on each of their events. Null while a condition does not compile (nothing to say yet).
 */
export function branchRouting(conditions: readonly string[]): 'entry' | 'event' | null {
  let readsEvent = false;
  for (const text of conditions) {
    const analysis = analyzeCondition(text);
    if (!analysis.ok) return null;
    readsEvent ||= analysis.condition.usage.usesEvent;
  }
  return readsEvent ? 'event' : 'entry';
}
