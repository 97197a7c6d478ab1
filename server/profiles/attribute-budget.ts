// The tenant's limit of distinct attribute paths (maxProfileAttributes), checked on a write's patches before anything
// is written or indexed: every path costs the index a few kilobytes even for one user, so one request of 100 profiles
// × 1,000 new names grew the server by 430 MB and took seconds. A write is refused whole (422 too_many_attributes
// naming the attribute, the limit and its value) as soon as one of its patches would take the tenant past the limit.
import { AppError } from '../errors';
import type { Attributes } from './index-tenant';
import { displayPath, segmentKey } from '../../core/profile-paths';

/** The paths a tenant holds: its profile index (server/profiles/index-tenant.ts), or NO_PATHS where none is at hand. */
export type HeldPaths = { readonly pathCount: number; path(key: string): unknown };
/** For a check without the index (the request thread): only what the request itself names is counted. */
export const NO_PATHS: HeldPaths = { pathCount: 0, path: () => undefined };

const SEPARATOR = '\u001f';
const isObject = (value: unknown): value is Attributes => typeof value === 'object' && value !== null && !Array.isArray(value);

export class AttributeBudget {
  /** Paths the patches admitted so far bring that the index did not hold when they were admitted. */
  private readonly added = new Set<string>();

  constructor(
    private readonly index: HeldPaths,
    private readonly limit: number,
  ) {}

  /**
   * Counts the paths `patch` sets (a null removes, so it adds nothing) and refuses the patch when they would take
   * the tenant past its limit. Paths a write removes are not counted as freed: a path is freed only once no profile
   * holds it, which a patch cannot tell. `where` says which item or line of the request the patch is.
   */
  admit(patch: Attributes, where: string): void {
    this.walk(patch, null, '', where);
  }

  private walk(attributes: Attributes, prefix: string[] | null, prefixKey: string, where: string): void {
    for (const key in attributes) {
      const value = attributes[key];
      // As the index reads a profile (server/profiles/index-tenant.ts addPaths): own keys holding a value.
      if (value === null || value === undefined || !Object.hasOwn(attributes, key)) continue;
      const path = prefix === null ? segmentKey(key) : `${prefixKey}${SEPARATOR}${segmentKey(key)}`;
      if (!this.index.path(path) && !this.added.has(path)) {
        this.added.add(path);
        if (this.index.pathCount + this.added.size > this.limit) this.refuse(prefix === null ? [key] : [...prefix, key], where);
      }
      if (isObject(value)) this.walk(value, prefix === null ? [key] : [...prefix, key], path, where);
    }
  }

  private refuse(segments: string[], where: string): void {
    // Paths admitted earlier may have reached the index since (an import commits chunks while it reads the next).
    for (const earlier of this.added) if (this.index.path(earlier)) this.added.delete(earlier);
    const held = this.index.pathCount + this.added.size;
    if (held <= this.limit) return;
    const attribute = displayPath(segments);
    throw new AppError(
      'too_many_attributes',
      `Attribute "${attribute}" (${where}) is one too many: this tenant's profiles may hold at most ${this.limit.toLocaleString('en-US')} ` +
        `distinct attributes (limit maxProfileAttributes; nested keys count as paths of their own) and this write would bring them ` +
        `to at least ${held.toLocaleString('en-US')}`,
      { limit: 'maxProfileAttributes', value: this.limit, attribute, attributes: held },
    );
  }
}
