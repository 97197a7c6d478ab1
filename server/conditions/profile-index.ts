import roaring, { type ReadonlyRoaringBitmap32, type RoaringBitmap32 } from 'roaring';
import type { PlanResolver, PlanScalar } from './compile';

// roaring is CommonJS: under ESM its classes are only reachable through the default import.
const { RoaringBitmap32: Bitmap } = roaring;

export type ProfileAttributes = Record<string, unknown>;

/** Strings, booleans and numbers are indexed (never equal to each other, as in CEL); an int literal and an equal JSON number share a key. */
function scalarKey(value: unknown): string | null {
  switch (typeof value) {
    case 'string':
      return `s:${value}`;
    case 'boolean':
      return value ? 'b:true' : 'b:false';
    case 'number':
      return Number.isNaN(value) ? null : `n:${value === 0 ? 0 : value}`;
    case 'bigint':
      return `n:${Number(value)}`;
    default:
      return null;
  }
}

const EMPTY: ReadonlyRoaringBitmap32 = new Bitmap().freeze();

/**
 * One tenant's profiles in memory, with a bitmap of users per (field, scalar value) kept up to date on every
 * change, so `profile.plan == "pro"` over millions of users is a bitmap lookup, not a scan.
 */
export class ProfileIndex {
  private readonly profiles = new Map<number, ProfileAttributes>();
  private readonly bitmaps = new Map<string, Map<string, RoaringBitmap32>>();

  get size(): number {
    return this.profiles.size;
  }

  get(user: number): ProfileAttributes | undefined {
    return this.profiles.get(user);
  }

  /** Replaces the user's attributes (the caller merges partial updates first); only changed fields touch bitmaps. */
  set(user: number, attributes: ProfileAttributes): void {
    const previous = this.profiles.get(user);
    if (previous) {
      for (const field of Object.keys(previous)) {
        if (!Object.hasOwn(attributes, field) || scalarKey(attributes[field]) !== scalarKey(previous[field])) {
          this.unindex(user, field, previous[field]);
        }
      }
    }
    for (const [field, value] of Object.entries(attributes)) {
      if (!previous || !Object.hasOwn(previous, field) || scalarKey(previous[field]) !== scalarKey(value)) {
        this.index(user, field, value);
      }
    }
    this.profiles.set(user, attributes);
  }

  remove(user: number): void {
    const previous = this.profiles.get(user);
    if (!previous) return;
    for (const [field, value] of Object.entries(previous)) this.unindex(user, field, value);
    this.profiles.delete(user);
  }

  /** The users whose `field` equals `value` (read-only: it is the live index bitmap). */
  equals(field: string, value: PlanScalar): ReadonlyRoaringBitmap32 {
    const key = scalarKey(value);
    return (key !== null && this.bitmaps.get(field)?.get(key)) || EMPTY;
  }

  private index(user: number, field: string, value: unknown): void {
    const key = scalarKey(value);
    if (key === null) return;
    let byValue = this.bitmaps.get(field);
    if (!byValue) this.bitmaps.set(field, (byValue = new Map()));
    let users = byValue.get(key);
    if (!users) byValue.set(key, (users = new Bitmap()));
    users.add(user);
  }

  private unindex(user: number, field: string, value: unknown): void {
    const key = scalarKey(value);
    if (key === null) return;
    const byValue = this.bitmaps.get(field);
    const users = byValue?.get(key);
    if (!byValue || !users) return;
    users.remove(user);
    if (users.isEmpty) {
      byValue.delete(key);
      if (byValue.size === 0) this.bitmaps.delete(field);
    }
  }
}

/** A PlanResolver over crowd bitmaps (looked up by name; an unknown crowd is empty) and a tenant's ProfileIndex. */
export function planResolver(crowd: (name: string) => ReadonlyRoaringBitmap32 | undefined, profiles: ProfileIndex): PlanResolver {
  return {
    crowd: (name) => crowd(name) ?? EMPTY,
    profileEquals: (field, value) => profiles.equals(field, value),
  };
}
