// Shards of partitions other members hold, rebuilt here for reads (exports, where-is-user) and kept: a shard rebuilt
// at journal seq S is brought up to date by replaying the rows after S (one indexed read, usually few rows) instead
// of decoding the checkpoint and replaying everything since it on every request. Bounded in memory (least recently
// used go first) and in work (a few full rebuilds at once; concurrent reads of one shard share one rebuild or
// catch-up; every entry counts at least ENTRY_BYTES_AT_LEAST, so empty shards are bounded too). Entries are keyed by
// workflow version, so a shard replayed under an older definition is never reused (it goes once a newer one is read), and
// notice a checkpoint written since with changes no journal row carries (a crowd update's joiners and leavers): then
// the shard is rebuilt from it instead of caught up.
import { catchUpShard, loadShard, type LoadedShard } from './recovery';
import type { Shard } from './shard';
import type { InstanceRuntime } from './tenant';
import type { Database } from '../storage/database';
import { systemClock, type Clock } from '../clock';

/** Rebuilt shards kept per process, by their serialized size (roughly their size in memory). */
export const COMMITTED_SHARDS_MAX_BYTES = 256 * 2 ** 20;
/**
 * What a kept shard counts against the bound at least, however small its bitmaps: without it, empty shards (and the
 * entries' own bookkeeping) were never evicted. At the default bound it keeps at most 65,536 shards.
 */
export const ENTRY_BYTES_AT_LEAST = 4 * 2 ** 10;
/** Full rebuilds (checkpoint decode + replay) running at once; more wait their turn. */
export const MAX_CONCURRENT_REBUILDS = 2;
/**
 * A kept shard older than this is rebuilt instead of caught up: journal retention may have removed rows after its
 * seq by then (it keeps days of rows), and a fresh checkpoint replays less.
 */
const REBUILD_AFTER_MS = 10 * 60_000;
/** Workflows of instances held elsewhere kept compiled (by instance and version), most recent first. */
const MAX_KEPT_INSTANCES = 1_000;

type Entry = { loaded: LoadedShard; bytes: number; builtAt: number; current?: Promise<Shard> };

export class CommittedShards {
  private readonly entries = new Map<string, Entry>();
  /** The newest workflow version read per instance and partition: a shard of an older one is not read again. */
  private readonly newest = new Map<string, number>();
  private bytes = 0;
  private rebuilding = 0;
  private readonly waiting: (() => void)[] = [];
  private readonly instances = new Map<string, Promise<InstanceRuntime>>();
  /** Full rebuilds and catch-ups done, and the most rebuilds that ran at once (tests). */
  readonly stats = { rebuilds: 0, catchUps: 0, peakRebuilds: 0 };

  constructor(
    /** The storage shards are rebuilt from (the engine's). */
    private readonly database: Database,
    /** When a shard was built, so a recent one is caught up rather than rebuilt (the cluster member's clock). */
    private readonly clock: Clock = systemClock,
    private readonly maxBytes = COMMITTED_SHARDS_MAX_BYTES,
    private readonly maxRebuilds = MAX_CONCURRENT_REBUILDS,
  ) {}

  /** The shard as committed now. Callers only read it: the next call may replay more rows into the same object. */
  shard(instance: InstanceRuntime, partition: number): Promise<Shard> {
    const place = `${instance.id}\u0000${partition}`;
    const version = instance.record.version;
    const key = `${place}\u0000${version}`;
    const newest = this.newest.get(place);
    if (newest === undefined || version > newest) {
      if (newest !== undefined) this.forget(`${place}\u0000${newest}`);
      this.newest.set(place, version);
    }
    const entry = this.entries.get(key);
    if (entry?.current) return entry.current;
    if (entry && this.clock.now() - entry.builtAt < REBUILD_AFTER_MS) {
      this.touch(key, entry);
      entry.current = catchUpShard(this.database, instance.record.tenantId, entry.loaded, instance.workflow)
        .then((caughtUp) => {
          if (!caughtUp) return this.build(key, instance, partition); // a crowd update since: only its checkpoint has it
          this.stats.catchUps++;
          this.resize(entry);
          return entry.loaded.shard;
        })
        .catch((error) => {
          if (this.entries.get(key) === entry) this.forget(key); // half replayed: the next read rebuilds it
          throw error;
        })
        .finally(() => (entry.current = undefined));
      return entry.current;
    }
    return this.build(key, instance, partition);
  }

  /**
   * A running instance another member made, as `build` makes it (its workflow loaded and compiled), kept by
   * instance and version so a lookup does not read and compile the definition again.
   */
  instance(row: { id: string; version: number }, build: () => Promise<InstanceRuntime>): Promise<InstanceRuntime> {
    const key = `${row.id}\u0000${row.version}`;
    let kept = this.instances.get(key);
    if (kept) this.instances.delete(key);
    else {
      kept = build();
      kept.catch(() => this.instances.delete(key));
    }
    this.instances.set(key, kept);
    if (this.instances.size > MAX_KEPT_INSTANCES) this.instances.delete(this.instances.keys().next().value!);
    return kept;
  }

  /** Kept shards and their bytes (tests). */
  size(): { shards: number; bytes: number } {
    return { shards: this.entries.size, bytes: this.bytes };
  }

  /** Replaces the entry (if any) with a shard rebuilt from the partition's checkpoint. */
  private build(key: string, instance: InstanceRuntime, partition: number): Promise<Shard> {
    this.drop(key);
    const building: Entry = { loaded: { shard: undefined as unknown as Shard, replayed: 0, seq: 0, unjournaled: null }, bytes: 0, builtAt: this.clock.now() };
    building.current = this.rebuild(instance, partition)
      .then((loaded) => {
        building.loaded = loaded;
        this.stats.rebuilds++;
        this.resize(building);
        return loaded.shard;
      })
      .catch((error) => {
        if (this.entries.get(key) === building) this.forget(key);
        throw error;
      })
      .finally(() => (building.current = undefined));
    this.entries.set(key, building);
    return building.current;
  }

  private async rebuild(instance: InstanceRuntime, partition: number): Promise<LoadedShard> {
    while (this.rebuilding >= this.maxRebuilds) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.rebuilding++;
    this.stats.peakRebuilds = Math.max(this.stats.peakRebuilds, this.rebuilding);
    try {
      return await loadShard(this.database, instance.record.tenantId, instance.id, partition, instance.workflow);
    } finally {
      this.rebuilding--;
      this.waiting.shift()?.();
    }
  }

  private touch(key: string, entry: Entry): void {
    this.entries.delete(key);
    this.entries.set(key, entry);
  }

  private resize(entry: Entry): void {
    const bytes = Math.max(ENTRY_BYTES_AT_LEAST, shardBytes(entry.loaded.shard));
    this.bytes += bytes - entry.bytes;
    entry.bytes = bytes;
    // Least recently used first (Map order); the entry just read stays even when it alone is over the bound.
    for (const [key, other] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      if (other !== entry && !other.current) this.forget(key);
    }
  }

  /** Drops the entry, and the partition's newest version with it when the entry was that version's. */
  private forget(key: string): void {
    this.drop(key);
    const place = key.slice(0, key.lastIndexOf('\u0000'));
    if (`${place}\u0000${this.newest.get(place)}` === key) this.newest.delete(place);
  }

  private drop(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    this.bytes -= entry.bytes;
  }
}

function shardBytes(shard: Shard): number {
  let bytes = 0;
  for (const bitmap of shard.steps.values()) bytes += bitmap.getSerializationSizeInBytes('portable');
  for (const bitmap of [...shard.converted.values(), ...shard.exited.values()]) bytes += bitmap.getSerializationSizeInBytes('portable');
  for (const buckets of [...shard.delays.values(), ...shard.ttls.values()])
    for (const bitmap of buckets.values()) bytes += bitmap.getSerializationSizeInBytes('portable');
  return bytes;
}
