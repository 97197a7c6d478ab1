import { notFound } from '../errors';
import type { Database } from '../storage/database';
import { retryTransient } from '../storage/transient';
import { ACTIVE_INSTANCE_STATES } from '../tenants/tenants';
import { loadDefinition } from './instance-store';
import type { PartitionWorker } from './partition';
import { WorkflowRuntime } from './runtime';
import type { FairTurns } from './slices';
import { InstanceRuntime, TenantRuntime } from './tenant';

/** What loading a tenant needs of its engine. */
export interface TenantLoadHost {
  readonly database: Database;
  readonly turns: FairTurns;
  /** Only a running engine starts a loaded tenant's partition loops (and goes on loading the tenants of its start). */
  isRunning(): boolean;
  partitionWorker(runtime: TenantRuntime, partition: number): PartitionWorker;
  /** Told once the tenant's instances are loaded and its partition loops made their first attempt. */
  tenantLoaded(tenantId: string, loaded: LoadedTenant): void;
}

/** A tenant an engine runs: its instances and one loop per partition. */
export type LoadedTenant = { runtime: TenantRuntime; workers: PartitionWorker[] };

type TenantEntry = { ready: Promise<LoadedTenant>; loaded?: LoadedTenant };

/** Tenants loaded side by side at start. */
const TENANTS_LOADED_AT_ONCE = 4;
/** How long loading the tenants at start rides out transient storage errors (each read retried with backoff). */
const LOAD_STORAGE_PATIENCE_MS = 60_000;

/**
 * The tenants an engine runs, each loaded once on first use (its running instances read, one loop per partition
 * started), and at start all of them, a few at a time, in the background: until its load ends a tenant that existed
 * at start is recovering, and reads of its live state are told so instead of waiting.
 */
export class LoadedTenants {
  private readonly entries = new Map<string, TenantEntry>();
  private readonly recovering = new Set<string>();
  private loadingAll: Promise<void> | undefined;

  constructor(private readonly host: TenantLoadHost) {}

  /** Lists every tenant of the database as recovering, then loads them in the background. */
  async loadAllInBackground(): Promise<void> {
    // A transient storage error must not leave every tenant unloaded (no partition loops, no timers until first used).
    const listed = await retryTransient(
      () => this.host.database.db.tenant.findMany({ select: { id: true }, orderBy: { id: 'asc' } }),
      LOAD_STORAGE_PATIENCE_MS,
    );
    const ids = listed.map((t) => t.id);
    for (const id of ids) if (!this.entries.get(id)?.loaded) this.recovering.add(id);
    this.loadingAll = this.loadEach(ids);
  }

  /** Resolves once every tenant listed at start is loaded. */
  async allLoaded(): Promise<void> {
    await this.loadingAll;
  }

  /** Whether the tenant is still loading since start; asking brings its load forward. */
  isRecovering(tenantId: string): boolean {
    if (!this.recovering.has(tenantId)) return false;
    if (this.entries.get(tenantId)?.loaded) return (void this.recovering.delete(tenantId), false);
    void this.load(tenantId).catch(() => undefined);
    return true;
  }

  /** The tenant, loaded now if it was not. */
  load(tenantId: string): Promise<LoadedTenant> {
    let entry = this.entries.get(tenantId);
    if (!entry) {
      const ready = this.read(tenantId);
      const created: TenantEntry = { ready };
      entry = created;
      this.entries.set(tenantId, created);
      ready.then(
        (loaded) => {
          created.loaded = loaded;
          this.host.tenantLoaded(tenantId, loaded);
        },
        () => this.entries.delete(tenantId),
      );
    }
    return entry.ready;
  }

  has(tenantId: string): boolean {
    return this.entries.has(tenantId);
  }

  /** The tenant if its load has ended. */
  loaded(tenantId: string): LoadedTenant | undefined {
    return this.entries.get(tenantId)?.loaded;
  }

  /** Every tenant whose load has ended. */
  allLoadedNow(): [string, LoadedTenant][] {
    return [...this.entries].flatMap(([id, entry]) => (entry.loaded ? [[id, entry.loaded] as [string, LoadedTenant]] : []));
  }

  /** The live instance, looked for in `tenantId` first when given, then in every loaded tenant. */
  findInstance(instanceId: string, tenantId?: string): InstanceRuntime | undefined {
    const hinted = tenantId === undefined ? undefined : this.loaded(tenantId)?.runtime.instances.get(instanceId);
    if (hinted) return hinted;
    for (const entry of this.entries.values()) {
      const instance = entry.loaded?.runtime.instances.get(instanceId);
      if (instance) return instance;
    }
    return undefined;
  }

  /** A deleted tenant: its loops end without writing anything more (its rows went with it). */
  async forget(tenantId: string): Promise<void> {
    const entry = this.entries.get(tenantId);
    if (!entry) return;
    const { runtime, workers } = await entry.ready;
    await Promise.all(workers.map((w) => w.stop(false)));
    runtime.data.close();
    if (this.entries.get(tenantId) === entry) this.entries.delete(tenantId);
  }

  /** At the engine's stop (after `isRunning()` turned false): waits for the start's loads, then stops every loop. */
  async stopAll(): Promise<void> {
    await this.loadingAll;
    for (const entry of this.entries.values()) {
      const { runtime, workers } = await entry.ready;
      await Promise.all(workers.map((w) => w.stop()));
      runtime.data.close();
    }
    this.entries.clear();
  }

  /** A few tenants at a time: each takes its leases and reads its checkpoints, which is mostly waiting on storage. */
  private async loadEach(ids: string[]): Promise<void> {
    let next = 0;
    const loadNext = async (): Promise<void> => {
      while (this.host.isRunning() && next < ids.length) {
        const id = ids[next++];
        await retryTransient(() => this.load(id), LOAD_STORAGE_PATIENCE_MS).catch((error) =>
          console.error(`[crowdflow] loading tenant ${id} failed; it loads again when next used`, error),
        );
        this.recovering.delete(id);
      }
    };
    await Promise.all(Array.from({ length: TENANTS_LOADED_AT_ONCE }, loadNext));
    this.recovering.clear();
    this.loadingAll = undefined;
  }

  private async read(tenantId: string): Promise<LoadedTenant> {
    const { database, turns } = this.host;
    const tenant = await database.db.tenant.findUnique({ where: { id: tenantId } });
    if (!tenant) throw notFound(`Tenant "${tenantId}"`);
    const runtime = new TenantRuntime(database, tenant.id, tenant, turns);
    for (const row of await database.db.instance.findMany({ where: { tenantId, state: { in: ACTIVE_INSTANCE_STATES } } })) {
      if (row.state === 'starting') continue; // its start procedure installs it
      const definition = await loadDefinition(database, tenantId, row.workflowId, row.version);
      runtime.instances.set(row.id, new InstanceRuntime(row, new WorkflowRuntime(definition, row.workflowId), tenant.partitions));
    }
    const workers = Array.from({ length: tenant.partitions }, (_, p) => this.host.partitionWorker(runtime, p));
    if (this.host.isRunning()) {
      for (const worker of workers) worker.start();
      await Promise.all(workers.map((w) => w.firstAttempt));
    }
    return { runtime, workers };
  }
}
