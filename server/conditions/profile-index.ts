import roaring, { type ReadonlyRoaringBitmap32 } from 'roaring';
import { ProfileIndex } from '../profiles/index-tenant';
import type { ProfileLeaf } from './plan';
import type { PlanResolver } from './plan-eval';

// roaring is CommonJS: under ESM its classes are only reachable through the default import.
const { RoaringBitmap32: Bitmap } = roaring;

export { ProfileIndex };

const EMPTY: ReadonlyRoaringBitmap32 = new Bitmap().freeze();

/** The users of `within` that satisfy one profile leaf of a plan, answered by the tenant's index. */
export function profileLeaf(profiles: ProfileIndex, leaf: ProfileLeaf, within: ReadonlyRoaringBitmap32) {
  switch (leaf.op) {
    case 'profileEq':
      return profiles.equals(leaf.field, leaf.value, within);
    case 'profileIn':
      return Bitmap.orMany(leaf.values.map((value) => profiles.equals(leaf.field, value, within)));
    case 'profileHas':
      return profiles.has(leaf.field, within);
    case 'profileCmp':
      return profiles.compare(leaf.field, leaf.cmp, leaf.value, within);
    case 'profileTime':
      return profiles.compareTime(leaf.field, leaf.cmp, leaf.at, within);
  }
}

/** A PlanResolver over crowd bitmaps (looked up by name; an unknown crowd is empty) and a tenant's ProfileIndex. */
export function planResolver(crowd: (name: string) => ReadonlyRoaringBitmap32 | undefined, profiles: ProfileIndex): PlanResolver {
  return {
    crowd: (name) => crowd(name) ?? EMPTY,
    profile: (leaf, within) => profileLeaf(profiles, leaf, within),
  };
}
