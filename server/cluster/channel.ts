// The request thread's end of the cluster channel (one LISTEN connection per process): counts other members publish
// for their partitions (./counts.ts), and change notices. Every notice this process makes (crowd and profile
// changes, a tenant deleted, a lookup cache cleared after a key revocation) is sent to the other members with
// pg_notify, and a notice heard from another member is delivered here as if made here (server/crowd/notice.ts).
import { LOOKUP_CACHE_CLEARED } from '../lookup-cache';
import { processOwner } from '../process-owner';
import { PROFILES_WRITTEN } from '../profiles/index-store';
import type { ProfileChange } from '../profiles/index-tenant';
import { ClusterCountsBoard } from './counts';
import { MemberLock } from './member-lock';
import { profilesWrittenElsewhere, profileWriteNotice } from '../profiles/cluster-writes';
import { clusterChannel, MAX_CHANNEL_PAYLOAD, notifyOnPool } from '../storage/cluster-session';
import type { Database } from '../storage/database';
import type { PostgresTarget } from '../storage/database-url';

type NoticeSignal = { kind: 'notice'; from: string; name: string; args: unknown[] };

/** Holds this process's membership, listens on the cluster channel and relays this process's notices to it: those of
 * the request thread's app, whose `database` this is (its local state: notices, caches, profile indexes). */
export async function startClusterChannel(
  database: Database,
  /** Where the cluster meets (./index.ts clusterTarget). */
  target: PostgresTarget,
  onCounts: (instanceId: string, tenantId: string) => void,
  engineResponsive: () => boolean,
): Promise<ClusterCountsBoard> {
  const me = processOwner();
  const channel = clusterChannel(target);
  // This thread holds the process's membership: its loop stays responsive while the engine thread is busy.
  const lock = new MemberLock(target, me, engineResponsive);
  await lock.hold();
  const board = new ClusterCountsBoard(
    database,
    target,
    onCounts,
    (payload) => {
      if (payload.kind === 'notice' && payload.from !== me) deliverNotice(database, payload as NoticeSignal);
    },
    lock,
  );
  await board.start();
  database.local.clusterRelay = (name, given) => {
    const args = name === PROFILES_WRITTEN ? profileWriteNotice(String(given[0]), Number(given[1]), given[2] as ProfileChange[] | undefined) : given;
    let payload = JSON.stringify({ kind: 'notice', from: me, name, args } satisfies NoticeSignal);
    // Too long for the channel: the notice goes with its first argument only (the tenant).
    if (payload.length > MAX_CHANNEL_PAYLOAD) payload = JSON.stringify({ kind: 'notice', from: me, name, args: args.slice(0, 1) } satisfies NoticeSignal);
    void notifyOnPool(database, channel, payload).catch((error: Error) => console.warn(`[crowdflow] could not tell the cluster about ${name}:`, error.message));
  };
  return board;
}

function deliverNotice(database: Database, signal: NoticeSignal): void {
  const { local } = database;
  if (signal.name === LOOKUP_CACHE_CLEARED) local.caches.get(String(signal.args[0]))?.clearHere();
  else if (signal.name === PROFILES_WRITTEN) {
    void profilesWrittenElsewhere(database, String(signal.args[0]), Number(signal.args[1]), signal.args[2] === undefined ? undefined : String(signal.args[2]));
    // The engine thread holds the index the server's profile calls use: it catches up with the write itself.
    local.noticeRelay?.(PROFILES_WRITTEN, signal.args);
  } else local.deliver(signal.name, signal.args);
}
