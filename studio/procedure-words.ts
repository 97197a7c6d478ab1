// A procedure as a marketer reads it: what it did to which journey and crowd, for how many users, or why it failed,
// instead of its type, step counter and ids (issue 32 §3). Read off the procedure's state data and output as the
// instance procedures (server/engine/instances.ts) and webhook deliveries write them.
import type { ProcedureView } from './model';

type Words = { what: string; outcome: string };

const count = (n: number, what: string) => `${n.toLocaleString('en-US')} ${what}${n === 1 ? '' : 's'}`;

const field = (value: unknown, key: string): unknown =>
  value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>)[key] : undefined;
const numberOf = (value: unknown, key: string) => (typeof field(value, key) === 'number' ? (field(value, key) as number) : null);
const textOf = (value: unknown, key: string) => (typeof field(value, key) === 'string' ? (field(value, key) as string) : null);

const WHAT: Record<string, (journey: string, crowd: string | null, version: number | null) => string> = {
  'instance.start': (journey, crowd) => `Start ${journey}${crowd ? ` over crowd “${crowd}”` : ''}`,
  'instance.stop': (journey) => `Stop ${journey}`,
  'instance.update-crowd': (journey, crowd) => `Update the crowd of ${journey}${crowd ? ` to “${crowd}”` : ''}`,
  'instance.update-workflow': (journey, _crowd, version) => `Move the users of ${journey} to version ${version ?? '?'}`,
  'webhook.deliver': () => 'Send users to a webhook',
};

/** What the procedure did; `journey` is the journey's name (or undefined while the list of journeys loads). */
export function describeProcedure(p: ProcedureView, journey: string | undefined): Words {
  const name = journey ? `“${journey}”` : p.workflowId ? 'the journey' : 'a journey';
  const crowd = textOf(p.data, 'crowd');
  const version = numberOf(p.data, 'version');
  const what = WHAT[p.type]?.(name, crowd, version) ?? p.type.replace(/[.-]/g, ' ');
  return { what, outcome: outcomeOf(p) };
}

function outcomeOf(p: ProcedureView): string {
  const out = p.output;
  switch (p.state) {
    case 'done': {
      if (textOf(out, 'skipped')) return `Nothing to do: ${textOf(out, 'skipped')}.`;
      const started = numberOf(out, 'userCount');
      const excluded = numberOf(out, 'excludedCount');
      if (p.type === 'instance.start' && started !== null)
        return `Started with ${count(started, 'user')}${excluded ? ` (${count(excluded, 'user')} left out: in an earlier run)` : ''}.`;
      const total = numberOf(out, 'total');
      if (p.type === 'instance.stop' && total !== null) return `Stopped; ${count(total, 'user')} were in it.`;
      const joined = numberOf(out, 'joined');
      const left = numberOf(out, 'left');
      if (joined !== null && left !== null) return `${count(joined, 'user')} joined, ${count(left, 'user')} left.`;
      const moved = numberOf(out, 'moved');
      if (moved !== null) return `Done; ${count(moved, 'user')} moved to a mapped step.`;
      return 'Done.';
    }
    case 'failed':
      return `Failed: ${p.error ?? 'no reason recorded'}${p.rollbackError ? ` (undoing it failed too: ${p.rollbackError})` : ''}. Retry runs it again.`;
    case 'retrying':
      return `Waiting to try again (${count(p.attempts, 'attempt')} so far)${p.error ? `: ${p.error}` : ''}.`;
    case 'prepare-rollback':
    case 'rolling-back':
      return `Undoing what it did, after: ${p.error ?? 'a failure'}.`;
    default:
      return 'Working on it…';
  }
}
