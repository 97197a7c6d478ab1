// Paths: how many moves took each edge of an instance's journey in a time window, and how many distinct users did,
// from the journal (bulk moves and single moves). A bulk move's bitmap is OR'd into its edge's users as it is; single
// moves come grouped by edge from the database, a page at a time, and each group's users are added in one call
// (one N-API call per edge and page, not per user). Moves are counted from the journal's `count`, so an edge a user took twice counts two moves and one user.
import { RoaringBitmap32 } from '../crowd/bitmap';
import type { Database } from '../storage/database';
import { readEdgeMoves, type BulkMove, type EdgeMoves, type JournalScope } from './journal-window';

export type PathEdge = { from: string | null; to: string; moves: number; users: number };

class Edge {
  moves = 0;
  readonly users = new RoaringBitmap32();

  constructor(
    readonly from: string | null,
    readonly to: string,
  ) {}
}

class PathsSink {
  readonly edges = new Map<string, Edge>();

  private at(from: string | null, to: string): Edge {
    const key = `${from ?? ''}\u0000${to}`;
    let edge = this.edges.get(key);
    if (!edge) this.edges.set(key, (edge = new Edge(from, to)));
    return edge;
  }

  /** A page's single moves of one edge: their users added in one call. */
  edge({ fromStep, toStep, moves, users }: EdgeMoves): void {
    const edge = this.at(fromStep, toStep);
    edge.users.addMany(users);
    edge.moves += moves;
  }

  bulk({ fromStep, toStep, bitmap, count }: BulkMove): void {
    const edge = this.at(fromStep, toStep);
    edge.users.orInPlace(RoaringBitmap32.deserialize(bitmap, 'portable'));
    edge.moves += count;
  }
}

/** The edges of the instance's moves in the window, most moves first (`from` null: entering the instance). */
export async function pathsOf(database: Database, scope: JournalScope): Promise<PathEdge[]> {
  const sink = new PathsSink();
  await readEdgeMoves(database, scope, { edge: (moves) => sink.edge(moves), bulk: (move) => sink.bulk(move) });
  return [...sink.edges.values()]
    .map((edge) => ({ from: edge.from, to: edge.to, moves: edge.moves, users: edge.users.size }))
    .sort((a, b) => b.moves - a.moves || (a.from ?? '').localeCompare(b.from ?? '') || a.to.localeCompare(b.to));
}
