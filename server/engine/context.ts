// What conditions read besides the event: tenant crowds (inCrowd) and profiles. Crowds are cached per tenant and
// dropped when the crowd module reports a change; profiles come from the tenant's profile index in memory
// (server/profiles/index-store.ts), which plans query as bitmaps and the per-user path reads values back from.
import type { CrowdMembership } from '../conditions/compile';
import { planResolver, type IndexPlanResolver } from '../profiles/index-plan';
import { loadCrowd } from '../crowd';
import { RoaringBitmap32 } from '../crowd/bitmap';
import { onCrowdChanged } from '../crowd/changes';
import { profileIndex } from '../profiles/index-store';
import type { ProfileIndex } from '../profiles/index-tenant';
import type { Database } from '../storage/database';

export type Attributes = Record<string, unknown>;

export class TenantData {
  private crowds = new Map<string, RoaringBitmap32 | undefined>();
  private readonly unsubscribe: () => void;

  constructor(
    private readonly database: Database,
    readonly tenantId: string,
  ) {
    this.unsubscribe = onCrowdChanged(database, (tenant, name) => {
      if (tenant === tenantId) this.crowds.delete(name);
    });
  }

  close(): void {
    this.unsubscribe();
  }

  /** Loads the named crowds into the cache (an unknown crowd is empty: inCrowd is false for everyone). */
  async prepareCrowds(names: string[]): Promise<void> {
    for (const name of names) {
      if (!this.crowds.has(name)) this.crowds.set(name, (await loadCrowd(this.database, this.tenantId, name))?.bitmap);
    }
  }

  /** A crowd's users (an unknown crowd: undefined); prepareCrowds() must have run for it. */
  crowd(name: string): RoaringBitmap32 | undefined {
    return this.crowds.get(name);
  }

  /** Synchronous membership for predicates; prepareCrowds() must have run for the crowds they use. */
  readonly membership: CrowdMembership = {
    has: (name, user) => this.crowds.get(name)?.has(user) ?? false,
  };

  /**
   * The profiles of `users` (users without one are absent), read back from the tenant's in-memory profile index:
   * no database query. `keys` limits them to the attributes the conditions read (null: whole profiles).
   */
  async profilesOf(users: Iterable<number>, keys: readonly string[] | null = null): Promise<Map<number, Attributes>> {
    const index = await profileIndex(this.database, this.tenantId);
    const bitmap = users instanceof RoaringBitmap32 ? users : RoaringBitmap32.from(Uint32Array.from(users));
    return index.materialize(bitmap, keys ?? undefined);
  }

  /** The tenant's profile index (local-time timers group users by zone with its equality bitmaps). */
  profiles(): Promise<ProfileIndex> {
    return profileIndex(this.database, this.tenantId);
  }

  /** A plan resolver over the cached crowds and the tenant's profile index. */
  async resolver(crowdNames: string[]): Promise<IndexPlanResolver> {
    await this.prepareCrowds(crowdNames);
    return planResolver((name) => this.crowds.get(name), await profileIndex(this.database, this.tenantId));
  }
}
