// What conditions read besides the event: tenant crowds (inCrowd) and profiles. Crowds are cached per tenant and
// dropped when the crowd module reports a change; profiles are read fresh per batch (only for the users a batch
// evaluates), and a ProfileIndex is built when a bitmap plan needs profile equality over a whole step.
import type { ReadonlyRoaringBitmap32 } from 'roaring';
import type { CrowdMembership, PlanResolver } from '../conditions/compile';
import { planResolver, ProfileIndex } from '../conditions/profile-index';
import { loadCrowd } from '../crowd';
import type { RoaringBitmap32 } from '../crowd/bitmap';
import { onCrowdChanged } from '../crowd/changes';
import { db } from '../storage/db';

export type Attributes = Record<string, unknown>;

const IN_LIST_CHUNK = 5_000;

export class TenantData {
  private crowds = new Map<string, RoaringBitmap32 | undefined>();
  private readonly unsubscribe: () => void;

  constructor(readonly tenantId: string) {
    this.unsubscribe = onCrowdChanged((tenant, name) => {
      if (tenant === tenantId) this.crowds.delete(name);
    });
  }

  close(): void {
    this.unsubscribe();
  }

  /** Loads the named crowds into the cache (an unknown crowd is empty: inCrowd is false for everyone). */
  async prepareCrowds(names: string[]): Promise<void> {
    for (const name of names) {
      if (!this.crowds.has(name)) this.crowds.set(name, (await loadCrowd(this.tenantId, name))?.bitmap);
    }
  }

  /** Synchronous membership for predicates; prepareCrowds() must have run for the crowds they use. */
  readonly membership: CrowdMembership = {
    has: (name, user) => this.crowds.get(name)?.has(user) ?? false,
  };

  /** The profiles of `users` (users without one are absent). */
  async profilesOf(users: Iterable<number>): Promise<Map<number, Attributes>> {
    const list = [...users];
    const out = new Map<number, Attributes>();
    for (let i = 0; i < list.length; i += IN_LIST_CHUNK) {
      const rows = await db().profile.findMany({
        where: { tenantId: this.tenantId, user: { in: list.slice(i, i + IN_LIST_CHUNK).map(BigInt) } },
        select: { user: true, attributes: true },
      });
      for (const row of rows) out.set(Number(row.user), JSON.parse(row.attributes) as Attributes);
    }
    return out;
  }

  /** A plan resolver over the cached crowds and, when the plan reads profiles, an index of the given users' profiles. */
  async resolver(crowdNames: string[], profileUsers: ReadonlyRoaringBitmap32 | null): Promise<PlanResolver> {
    await this.prepareCrowds(crowdNames);
    const index = new ProfileIndex();
    if (profileUsers) for (const [user, attributes] of await this.profilesOf(profileUsers.toArray())) index.set(user, attributes);
    return planResolver((name) => this.crowds.get(name), index);
  }
}
