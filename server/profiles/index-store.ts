// Each tenant's profile index in this process: loaded on first use (from its snapshot when the snapshot is current,
// else rebuilt from the Profile rows), changed only through profileWrite() (commit first, then apply), and
// snapshotted a few seconds after the last write. Writes and loads of one tenant take turns on a per-tenant lock,
// so between writes the index in memory is exactly the database at `seq` (the count of committed writes); a write's
// changes are applied in pieces, with other work between them.
import { callAfter, nextTurnOfTheLoop, systemClock, type Clock, type NextTurn } from '../clock';
import { tenantLimits } from '../limits/limits';
import { decodeIndex, encodeIndex } from './index-codec';
import roaring from 'roaring';
import { ProfileIndex, type Attributes, type ProfileChange, type RelayedProfileWrite } from './index-tenant';
import type { Database } from '../storage/database';
import { eachProfilePage } from '../storage/profile-reads';
import { ensureProfileIndexState, readProfileIndexState, writeProfileSnapshot } from '../storage/profile-index-snapshots';

const { RoaringBitmap32: Bitmap } = roaring;

/** Profile rows read per page while rebuilding; the event loop is free between pages. */
const REBUILD_PAGE = 20_000;
/** A snapshot is written this long after the last write, and at the latest this long after the first unsaved one. */
export const SNAPSHOT_QUIET_MS = 2_000;
const SNAPSHOT_MAX_DELAY_MS = 30_000;

export class TenantProfiles {
  index: ProfileIndex | null = null;
  seq = 0;
  savedSeq = -1;
  private tail: Promise<unknown> = Promise.resolve();
  private cancelSnapshot: (() => void) | undefined;
  /** When the oldest write the saved snapshot lacks was applied; null: the snapshot holds every write. */
  private firstUnsavedAt: number | null = null;
  private dueAt: number | null = null;
  /** Load and rebuild figures of the last load, for /profiles/fields and the bench. */
  lastLoad: { source: 'snapshot' | 'rows' | 'empty'; ms: number; profiles: number } | null = null;

  constructor(
    readonly database: Database,
    readonly tenantId: string,
    readonly clock: Clock,
  ) {}

  /** Runs `work` alone among this tenant's profile writes, loads and snapshots. */
  exclusive<T>(work: () => Promise<T>): Promise<T> {
    const result = this.tail.then(work);
    this.tail = result.catch(() => undefined);
    return result;
  }

  async loaded(): Promise<ProfileIndex> {
    if (!this.index) await this.load();
    return this.index!;
  }

  private async load(): Promise<void> {
    const started = performance.now();
    const state = await readProfileIndexState(this.database, this.tenantId);
    const seq = state.seq ?? 0;
    const { maxIndexedValuesPerAttribute } = await tenantLimits(this.database, this.tenantId);
    const snapshot = state.snapshot ? decodeIndex(state.snapshot) : null;
    if (snapshot) {
      snapshot.fitIndexedValues(maxIndexedValuesPerAttribute);
      this.index = snapshot;
      this.seq = this.savedSeq = seq;
      this.lastLoad = { source: 'snapshot', ms: performance.now() - started, profiles: snapshot.size };
      this.markSaved(); // the index is the database as it is now: no write before the load is owed a snapshot
      return;
    }
    const index = new ProfileIndex();
    index.setIndexedValueLimit(maxIndexedValuesPerAttribute);
    await eachProfilePage(this.database, this.tenantId, REBUILD_PAGE, (rows) =>
      index.apply(rows.map((row) => ({ user: row.user, after: JSON.parse(row.attributes) as Attributes }))),
    );
    this.index = index;
    this.seq = seq;
    const counted = state.seq !== null;
    this.lastLoad = { source: index.size === 0 && !counted ? 'empty' : 'rows', ms: performance.now() - started, profiles: index.size };
    // Profiles written before this table existed have no state row yet: give them one, so the next boot reads a snapshot.
    if (!counted && index.size > 0) await ensureProfileIndexState(this.database, this.tenantId);
    if (counted || index.size > 0) await this.saveSnapshot();
    else this.markSaved(); // nothing stored yet: no snapshot is owed
  }

  /** Writes the index as it is now, labelled with the seq it reflects. */
  async saveSnapshot(): Promise<void> {
    // No index (dropped: the next load rebuilds and snapshots it) or nothing new: nothing is owed.
    if (!this.index || this.savedSeq === this.seq) {
      this.markSaved();
      return;
    }
    const seq = this.seq;
    const bytes = await encodeIndex(this.index);
    // Not stored if another process has written since (its writes are not in this index): then the next load rebuilds.
    await writeProfileSnapshot(this.database, this.tenantId, seq, bytes);
    this.savedSeq = seq;
    this.markSaved();
  }

  private markSaved(): void {
    this.firstUnsavedAt = null;
    this.dueAt = null;
  }

  /** Imports in progress: they write their snapshot when they end, so the periodic one waits (encoding 10M profiles is not free). */
  importing = 0;

  /** Set while the index misses writes made on another member (server/profiles/cluster-writes.ts): since when, and
   * the timer that forgets the index once they go quiet. */
  lagging: { since: number; cancel: () => void } | undefined;

  /**
   * After a write: the snapshot is written SNAPSHOT_QUIET_MS after the last write, at the latest SNAPSHOT_MAX_DELAY_MS
   * after the first one it lacks: encoding the whole index (≈ 50 MB at 10M profiles) per write would cost each write
   * far more than the write itself.
   */
  scheduleSnapshot(): void {
    if (this.importing > 0) return;
    const now = this.clock.now();
    this.firstUnsavedAt ??= now;
    this.cancelSnapshot?.();
    this.dueAt = Math.min(now + SNAPSHOT_QUIET_MS, this.firstUnsavedAt + SNAPSHOT_MAX_DELAY_MS);
    this.cancelSnapshot = callAfter(this.clock, this.dueAt - now, () => {
      this.exclusive(() => this.saveSnapshot()).catch((error) => {
        // Still owed: the next write schedules it again, at once (its first unsaved write is older than the cap).
        this.dueAt = null;
        console.warn(`[crowdflow] profile index snapshot of tenant ${this.tenantId} failed`, error);
      });
    });
  }

  /** When the pending snapshot is to be written (epoch ms); null: none pending. */
  get snapshotDueAt(): number | null {
    return this.dueAt;
  }

  close(): void {
    this.cancelSnapshot?.();
    this.lagging?.cancel();
  }
}

/** An app's profile indexes, kept in its local state (server/storage/local-state.ts). */
export class ProfileIndexes {
  /** Each tenant's, loaded on first use. */
  readonly byTenant = new Map<string, TenantProfiles>();
  /** `clock`: what the snapshots' and lagging indexes' waits are timed on (the app's: `holdProfileIndexes`). */
  constructor(readonly clock: Clock = systemClock) {}
  /** Hands every committed write of this thread to the engine thread's index (set by server/engine/client.ts); `write`
   * null: forget the tenant's index (too many changes to copy across, or the tenant is gone). */
  relay: ((tenantId: string, write: RelayedProfileWrite | null, seq: number) => void) | undefined;
}

/** The profile indexes of the app of `database`. */
export function profileIndexes(database: Database): ProfileIndexes {
  return database.local.held(PROFILE_INDEXES, () => new ProfileIndexes());
}

/** Gives the app of a fresh `database` its profile indexes, timed on `clock` (server/create-app.ts, first thing). */
export function holdProfileIndexes(database: Database, clock: Clock): void {
  database.local.held(PROFILE_INDEXES, () => new ProfileIndexes(clock));
}

const PROFILE_INDEXES = 'profile-indexes';

function tenants(database: Database): Map<string, TenantProfiles> {
  return profileIndexes(database).byTenant;
}

function tenantProfiles(database: Database, tenantId: string): TenantProfiles {
  let held = tenants(database).get(tenantId);
  if (!held) {
    const indexes = profileIndexes(database);
    indexes.byTenant.set(tenantId, (held = new TenantProfiles(database, tenantId, indexes.clock)));
  }
  return held;
}

/** The tenant's index as held in this app, if loaded or loading. */
export function heldProfiles(database: Database, tenantId: string): TenantProfiles | undefined {
  return tenants(database).get(tenantId);
}

/** The tenant's index, loaded if needed. Read it synchronously: every change is applied in one synchronous step. */
export function profileIndex(database: Database, tenantId: string): Promise<ProfileIndex> {
  const held = tenantProfiles(database, tenantId);
  if (held.index) return Promise.resolve(held.index);
  return held.exclusive(() => held.loaded());
}

/** When the tenant's pending index snapshot is due (epoch ms); null: none pending or not loaded here. */
export function profileSnapshotDueAt(database: Database, tenantId: string): number | null {
  return tenants(database).get(tenantId)?.snapshotDueAt ?? null;
}

/** How the tenant's index was last loaded (null: not loaded in this process yet). */
export function profileIndexLoad(database: Database, tenantId: string) {
  return tenants(database).get(tenantId)?.lastLoad ?? null;
}

/**
 * Changes applied to the index between two turns of the thread: 1,000 took 2-7 ms, a whole 10,000-profile upsert
 * 22-36 ms and an import's 5,000-line chunk 31-40 ms in one go (over an index of 2M profiles), during which no other
 * tenant's work ran. Readers between two pieces see some of the write's users changed and the rest not yet, as if
 * it had been written in smaller pieces; each user's change is whole.
 */
const APPLY_PIECE = 1_000;

async function applyInPieces(index: ProfileIndex, changes: ProfileChange[], turn: NextTurn): Promise<void> {
  for (let from = 0; from < changes.length; from += APPLY_PIECE) {
    if (from > 0) await turn();
    index.apply(from === 0 && changes.length <= APPLY_PIECE ? changes : changes.slice(from, from + APPLY_PIECE));
  }
}

/**
 * Runs a profile write: `write` gets the loaded index (to know who has a profile), commits, and returns its changes
 * and the write's seq (server/storage/profile-merges.ts and profile-rows.ts count it); the changes are applied to the
 * index only after the commit. A write that fails changes nothing; an apply that throws, or a write that is not the
 * next one of the index (a write committed elsewhere came between), drops the index, so the next use rebuilds it from
 * the database and no snapshot is taken of it.
 */
export function profileWrite<T>(
  database: Database,
  tenantId: string,
  /** `afterTexts`, when the write has them: the JSON of each change's profile after it ("null": deleted), in order. */
  write: (index: ProfileIndex) => Promise<{ result: T; changes: ProfileChange[]; seq: number; afterTexts?: string[] }>,
  turn: NextTurn = nextTurnOfTheLoop,
): Promise<T> {
  const held = tenantProfiles(database, tenantId);
  return held.exclusive(async () => {
    const index = await held.loaded();
    const { result, changes, seq, afterTexts } = await write(index);
    if (seq !== held.seq + 1) {
      // Another member committed a write in between whose notice has not been applied here (it would be ignored
      // once the index is past it): the index lacks it, so it goes, and is reloaded from the rows on next use.
      held.index = null;
      relayProfileWrite(database, tenantId, null, seq);
    } else {
      try {
        await applyInPieces(index, changes, turn);
        held.seq = seq;
      } catch (error) {
        held.index = null;
        throw error;
      }
      held.scheduleSnapshot();
      relayProfileWrite(database, tenantId, changes, seq, afterTexts);
    }
    database.local.clusterRelay?.(PROFILES_WRITTEN, [tenantId, seq, changes]); // the cluster channel names the users when they fit
    return result;
  });
}

/** Changes copied to the engine thread at most per write; a bigger write makes it reload the index instead. */
const MAX_RELAYED_CHANGES = 10_000;

export function relayProfileWrite(database: Database, tenantId: string, changes: ProfileChange[] | null, seq: number, afterTexts?: string[]): void {
  const relay = profileIndexes(database).relay;
  if (relay) relay(tenantId, changes && changes.length <= MAX_RELAYED_CHANGES ? relayedWrite(changes, afterTexts) : null, seq);
}

/**
 * A committed write as it crosses to the engine thread: its users, and their profiles after it as ONE JSON text
 * (null: deleted). A string is copied as one block, where 5,000 change objects were cloned one by one on the request
 * thread (an import sends one write per chunk); the befores need not cross at all, since the engine thread's index
 * is at the write before this one and reads them back itself.
 */
export function relayedWrite(changes: ProfileChange[], afterTexts?: string[]): RelayedProfileWrite {
  const users = new Uint32Array(changes.length);
  const afters = new Array<Attributes | null>(changes.length);
  for (let i = 0; i < changes.length; i++) {
    users[i] = changes[i].user;
    afters[i] = changes[i].after ?? null;
  }
  // The texts an import already wrote to its rows need no second JSON.stringify.
  return { users, afters: afterTexts ? `[${afterTexts.join(',')}]` : JSON.stringify(afters) };
}

/**
 * The engine thread's side of a write committed by the request thread: applied when it is the next write of the
 * index held here, skipped when the index was loaded after it, and the index forgotten (reloaded on next use) when
 * writes are missing or too many changes to copy.
 */
export function applyRelayedProfileWrite(database: Database, tenantId: string, write: RelayedProfileWrite | null, seq: number): Promise<void> {
  const held = tenants(database).get(tenantId);
  if (!held) return Promise.resolve();
  return held.exclusive(async () => {
    if (!held.index || seq <= held.seq) return;
    if (write === null || seq !== held.seq + 1) {
      held.index = null;
      return;
    }
    applyRelayedWrite(held.index, write);
    held.seq = seq;
  });
}

/** Applies a relayed write to an index that is the database at the write before it (so it holds the befores). */
export function applyRelayedWrite(index: ProfileIndex, write: RelayedProfileWrite): void {
  const afters = JSON.parse(write.afters) as Array<Attributes | null>;
  const before = index.materialize(Bitmap.from(write.users));
  index.apply(Array.from(write.users, (user, i) => ({ user, before: before.get(user), after: afters[i] ?? undefined })));
}

/** Runs an import: no periodic snapshot meanwhile; one at the end, also after a failed import (its committed chunks). */
export async function duringImport<T>(database: Database, tenantId: string, work: () => Promise<T>): Promise<T> {
  const held = tenantProfiles(database, tenantId);
  held.importing++;
  try {
    return await work();
  } finally {
    held.importing--;
    await saveProfileSnapshot(database, tenantId).catch((error) => console.warn(`[crowdflow] profile index snapshot of tenant ${tenantId} failed`, error));
  }
}

/** Writes the snapshot now (after an import; tests), instead of a few seconds after the last write. */
export async function saveProfileSnapshot(database: Database, tenantId: string): Promise<void> {
  const held = tenants(database).get(tenantId);
  if (held) await held.exclusive(() => held.saveSnapshot());
}

/** The cluster notice of a committed profile write (its arguments: the tenant, the write's seq, its changes). */
export const PROFILES_WRITTEN = 'profiles-written';

/**
 * An app closing (server/create-app.ts): each index's owed snapshot is written now, as a clean stop writes its last
 * checkpoints, so the next start loads it instead of rebuilding from the rows; then its timers are stopped, so none
 * fires into a closed app.
 */
export async function closeProfileIndexes(database: Database): Promise<void> {
  const indexes = tenants(database);
  for (const [tenantId, held] of indexes) {
    await held
      .exclusive(() => held.saveSnapshot())
      .catch((error) => console.warn(`[crowdflow] profile index snapshot of tenant ${tenantId} failed at close`, error));
    held.close();
  }
  indexes.clear();
}

/** Forgets the tenant's index in this process (tenant deleted; tests simulating a restart). */
export function dropProfileIndex(database: Database, tenantId: string): void {
  const held = tenants(database).get(tenantId);
  held?.close();
  tenants(database).delete(tenantId);
  relayProfileWrite(database, tenantId, null, Number.MAX_SAFE_INTEGER);
}
