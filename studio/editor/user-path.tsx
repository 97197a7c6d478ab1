'use client';
import { createContext, useContext, useState, type FormEvent, type ReactNode } from 'react';
import { type ApiError, apiGet, pathSegment, tenantPath } from '../api';
import type { WhereIsUser } from '../model';
import { ErrorBox } from '../ui';
import { useCanvasInfo } from './context';

// One user's path through the running journey, read from the API's where-is-user answer (`GET …/users/{user}`: the
// step the user rests in, per running instance, and the user's recent moves): the steps the user went through are
// marked on the canvas, the step they are in now most of all, with the moves in words beside the journey. It moves no
// one: it only reads.

export type UserPath = {
  /** `followed`: where the user went (the journal); `preview`: where the user would go now (path-preview.tsx). */
  kind: 'followed' | 'preview';
  user: number;
  /**
   * Each step on the path: `current` for the step the user is in now, `visited` for the steps passed through; in a
   * preview (what the user WOULD do), `would` for the steps they would pass and `would-end` where the walk ends.
   */
  steps: Map<string, PathMark>;
  /** Moves taken, as "from->to". */
  edges: Set<string>;
  moves: { from: string | null; to: string; time: string }[];
  current: string | null;
  /** False when the server's search of bulk moves stopped before the user's first move. */
  complete: boolean;
};

export type PathMark = 'current' | 'visited' | 'would' | 'would-end';

type PathState = { path: UserPath | null; setPath: (path: UserPath | null) => void };

export const PathContext = createContext<PathState>({ path: null, setPath: () => {} });

export function UserPathProvider({ children }: { children: ReactNode }) {
  const [path, setPath] = useState<UserPath | null>(null);
  return <PathContext.Provider value={{ path, setPath }}>{children}</PathContext.Provider>;
}

export const useUserPath = () => useContext(PathContext).path;

/** The user's path in one instance, oldest move first. */
export function pathOf(where: WhereIsUser, instanceId: string): UserPath {
  const moves = where.recentMoves
    .filter((m) => m.instanceId === instanceId)
    .sort((a, b) => a.seq - b.seq)
    .map((m) => ({ from: m.fromStep, to: m.toStep, time: m.time }));
  const current = where.instances.find((i) => i.instanceId === instanceId)?.step ?? null;
  const steps = new Map<string, PathMark>();
  for (const move of moves) {
    if (move.from) steps.set(move.from, 'visited');
    steps.set(move.to, 'visited');
  }
  if (current) steps.set(current, 'current');
  const edges = new Set(moves.flatMap((m) => (m.from ? [`${m.from}->${m.to}`] : [])));
  return { kind: 'followed', user: where.user, steps, edges, moves, current, complete: where.recentMovesComplete };
}

/**
 * A move said in words: the journal's entry move (`fromStep` null: the user entered the instance, at its start, by a
 * crowd update or an event trigger) is "entered at <step>", never "<step> → <step>".
 */
export function moveInWords(from: string | null, to: string): string {
  return from === null ? `entered at ${to}` : `${from} → ${to}`;
}

/** "Follow a user": a user id typed, their path shown on the canvas and in words. */
export function UserPathPanel() {
  const { tenant, instanceId, live } = useCanvasInfo();
  const { path, setPath } = useContext(PathContext);
  const [user, setUser] = useState('');
  const [error, setError] = useState<ApiError | null>(null);
  if (!live || !instanceId) return null;

  async function follow(event: FormEvent) {
    event.preventDefault();
    setError(null);
    setPath(null);
    try {
      setPath(pathOf(await apiGet<WhereIsUser>(tenantPath(tenant, `/users/${pathSegment(user.trim())}`)), instanceId!));
    } catch (caught) {
      setError(caught as ApiError);
    }
  }

  return (
    <section className="user-path" aria-labelledby="user-path-title" data-testid="user-path">
      <h3 id="user-path-title">Follow a user</h3>
      <form onSubmit={follow} className="row">
        <input
          aria-label="User ID to follow"
          placeholder="User ID, e.g. 42"
          inputMode="numeric"
          value={user}
          onChange={(e) => setUser(e.target.value)}
          data-testid="user-path-input"
        />
        <button type="submit" disabled={!user.trim()}>
          Show path
        </button>
        {path?.kind === 'followed' && (
          <button type="button" className="link" onClick={() => setPath(null)} data-testid="user-path-clear">
            Clear
          </button>
        )}
      </form>
      {error && <ErrorBox error={error} />}
      {path?.kind === 'followed' && <PathInWords path={path} />}
    </section>
  );
}

function PathInWords({ path }: { path: UserPath }) {
  const at = (time: string) => new Date(time).toLocaleString();
  if (!path.current && path.moves.length === 0)
    return (
      <p className="small" role="status" data-testid="user-path-summary">
        User {path.user} is not in this journey: not in the crowd it started with, or already gone from it.
      </p>
    );
  return (
    <div className="small" role="status">
      <p data-testid="user-path-summary">
        {path.current ? (
          <>
            User {path.user} is in “<strong>{path.current}</strong>” now.
          </>
        ) : (
          <>User {path.user} has left this journey.</>
        )}
      </p>
      <ol className="user-path-moves">
        {path.moves.map((m, i) => (
          <li key={i} data-testid="user-path-move">
            {moveInWords(m.from, m.to)} <span className="muted">· {at(m.time)}</span>
          </li>
        ))}
      </ol>
      {!path.complete && <p className="muted">Older moves were not searched.</p>}
    </div>
  );
}
