// Paths: how many moves took each edge of an instance's journey in a time window, and how many distinct users did,
// from the journal (bulk moves and single moves). A bulk move's bitmap is OR'd into its edge's users as it is; single
// moves are gathered per edge into a typed array and added in batches (one call across N-API per batch, not per
// user). Moves are counted from the journal's `count`, so an edge a user took twice counts two moves and one user.
import { RoaringBitmap32 } from '../crowd/bitmap';
import type { Database } from '../storage/database';
import { readMoves, type BulkMove, type MoveSink, type SingleMoves, type TimeWindow } from './journal-window';

export type PathEdge = { from: string | null; to: string; moves: number; users: number };

const PENDING_USERS = 65_536;

class Edge {
  moves = 0;
  readonly users = new RoaringBitmap32();
  private pending: Uint32Array = new Uint32Array(1024);
  private waiting = 0;

  constructor(
    readonly from: string | null,
    readonly to: string,
  ) {}

  addUser(user: number): void {
    if (this.waiting === this.pending.length) {
      if (this.pending.length < PENDING_USERS) this.pending = growTo(this.pending, this.pending.length * 2);
      else this.flush();
    }
    this.pending[this.waiting++] = user;
    this.moves++;
  }

  flush(): void {
    if (this.waiting > 0) this.users.addMany(this.pending.subarray(0, this.waiting));
    this.waiting = 0;
  }
}

function growTo(array: Uint32Array, length: number): Uint32Array {
  const grown = new Uint32Array(length);
  grown.set(array);
  return grown;
}

class PathsSink implements MoveSink {
  readonly edges = new Map<string, Edge>();

  private edge(from: string | null, to: string): Edge {
    const key = `${from ?? ''}\u0000${to}`;
    let edge = this.edges.get(key);
    if (!edge) this.edges.set(key, (edge = new Edge(from, to)));
    return edge;
  }

  singles({ fromSteps, toSteps, users }: SingleMoves): void {
    for (let i = 0; i < users.length; i++) this.edge(fromSteps[i], toSteps[i]).addUser(users[i]);
  }

  bulk({ fromStep, toStep, bitmap, count }: BulkMove): void {
    const edge = this.edge(fromStep, toStep);
    edge.users.orInPlace(RoaringBitmap32.deserialize(bitmap, 'portable'));
    edge.moves += count;
  }

  endPartition(): void {}
}

/** The edges of the instance's moves in the window, most moves first (`from` null: entering the instance). */
export async function pathsOf(database: Database, instanceId: string, partitions: number, window: TimeWindow): Promise<PathEdge[]> {
  const sink = new PathsSink();
  await readMoves(database, instanceId, partitions, window, sink);
  return [...sink.edges.values()]
    .map((edge) => {
      edge.flush();
      return { from: edge.from, to: edge.to, moves: edge.moves, users: edge.users.size };
    })
    .sort((a, b) => b.moves - a.moves || (a.from ?? '').localeCompare(b.from ?? '') || a.to.localeCompare(b.to));
}
