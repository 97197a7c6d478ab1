// Who is alive, through PostgreSQL alone (the engine thread's side). Each process holds its membership from its
// request thread (./member-lock.ts: a session advisory lock, a ClusterMember row and a heartbeat); this side reads
// the live members (lock held, heartbeat fresh, not draining), marks this member draining on SIGTERM, and listens on
// the schema's LISTEN/NOTIFY channel where members announce joins, leaves, handoffs, gathers and new events. Its
// connection is a ClusterSession; the statements are storage operations (server/storage/membership.ts, gathers.ts).
import { ClusterSession } from '../storage/cluster-session';
import type { PostgresTarget } from '../storage/database-url';
import { isMemberLive, liveMemberNames, markMemberDraining } from '../storage/membership';
import { reconnectUntilClosed } from './reconnect';

/** A member whose heartbeat is older than this is not live, even while its lock is held (a hung process). */
export const HEARTBEAT_STALE_MS = 15_000;

/**
 * What members tell each other on the channel: a change of membership, a partition handed back, a gather (these
 * make members assign again), events appended for a tenant (its owners read the log now), counts and notices.
 */
export type ClusterSignal =
  | { kind: 'members' | 'released' | 'gather'; from: string; tenantId?: string }
  | { kind: 'events'; from: string; tenantId: string }
  | { kind: 'counts' | 'notice'; from?: string };

export class Membership {
  /** Rebalance ticks, lease takeovers (isGone), gathers and signals share it: its queries run one at a time. */
  private session: ClusterSession | undefined;
  private closed = false;
  private listenedBefore = false;

  constructor(
    private readonly target: PostgresTarget,
    readonly name: string,
    private readonly onSignal: (signal: ClusterSignal) => void,
    /** Listening again after the channel's connection was lost: signals sent meanwhile were missed. */
    private readonly onRelistened: () => void = () => undefined,
  ) {}

  /** Connects and listens on the channel (the membership itself is held by the request thread's MemberLock). */
  async join(): Promise<void> {
    this.closed = false;
    await this.listen();
  }

  private async listen(): Promise<void> {
    const session: ClusterSession = await ClusterSession.open(
      this.target,
      'cluster channel',
      {
        failed: (error) => console.warn('[crowdflow] cluster channel connection lost:', error.message),
        ended: () => this.reconnectLater(session),
        heard: (payload) => {
          try {
            this.onSignal(JSON.parse(payload) as ClusterSignal);
          } catch (error) {
            console.warn('[crowdflow] unreadable cluster signal', error);
          }
        },
      },
      () => this.closed,
    );
    try {
      await session.listen();
    } catch (error) {
      await session.end();
      throw error;
    }
    // Left while connecting: a listener kept now would outlive the member.
    if (this.closed) return void (await session.end());
    const relistened = this.listenedBefore;
    this.session = session;
    this.listenedBefore = true;
    if (relistened) this.onRelistened();
  }

  private reconnectLater(session: ClusterSession): void {
    if (this.closed || this.session !== session) return;
    this.session = undefined;
    reconnectUntilClosed(
      () => this.listen(),
      () => this.closed,
      'cluster channel',
    );
  }

  /** The members that should own partitions now, sorted: lock held, heartbeat fresh, not draining. */
  async liveMembers(): Promise<string[]> {
    return this.session ? liveMemberNames(this.session, HEARTBEAT_STALE_MS) : [];
  }

  /** Whether no live process holds the lock of a member of that name (its leases can be taken at once). */
  async isGone(name: string): Promise<boolean> {
    return this.session ? !(await isMemberLive(this.session, name, HEARTBEAT_STALE_MS)) : false;
  }

  /** Leaving soon (SIGTERM): the others stop counting on this member while it hands its partitions back. */
  async drain(): Promise<void> {
    if (this.session) await markMemberDraining(this.session, this.name);
    await this.signal({ kind: 'members', from: this.name });
  }

  /** Stops listening (the request thread's MemberLock then leaves, once the engine handed its partitions back). */
  async leave(): Promise<void> {
    this.closed = true;
    const session = this.session;
    this.session = undefined;
    await session?.end();
  }

  /** Tells every member (this one included) on the channel. */
  async signal(signal: ClusterSignal): Promise<void> {
    if (this.session) await this.session.notify(JSON.stringify(signal));
  }

  /** Runs a storage operation on the membership's connection (the gather rows, the tenants to assign), after the ones asked before it. */
  async onSession<T>(operation: (session: ClusterSession) => Promise<T>): Promise<T> {
    if (!this.session) throw new Error('not connected to the cluster');
    return operation(this.session);
  }
}
