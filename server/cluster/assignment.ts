// Which live member should own each partition of a tenant: rendezvous (highest random weight) hashing of
// (tenant, partition) over the members, with a bound on load so that no member owns more than ceil(P / M) of a
// tenant's partitions. Every member computes the same answer from the same inputs (the sorted live set), so no
// coordinator is needed; while views differ for a moment the partition leases (fencing epochs) keep one writer.
import { createHash } from 'node:crypto';

function weight(member: string, tenantId: string, partition: number): bigint {
  return createHash('sha1').update(`${member}\u0000${tenantId}\u0000${partition}`).digest().readBigUInt64BE(0);
}

/**
 * The desired owner of each partition (index = partition). Partitions are placed in order; each goes to the
 * member of highest weight among those below the cap, so a member joining or leaving moves few partitions.
 * `gatheredBy`: a live member running a tenant-wide instance operation, which wants every partition for a moment.
 */
export function assignPartitions(members: readonly string[], tenantId: string, partitions: number, gatheredBy?: string): string[] {
  if (members.length === 0) return [];
  if (gatheredBy && members.includes(gatheredBy)) return Array.from({ length: partitions }, () => gatheredBy);
  const sorted = [...members].sort();
  const cap = Math.ceil(partitions / sorted.length);
  const load = new Map(sorted.map((m) => [m, 0]));
  const owners: string[] = [];
  for (let p = 0; p < partitions; p++) {
    const ranked = sorted.map((m) => ({ m, w: weight(m, tenantId, p) })).sort((a, b) => (a.w === b.w ? (a.m < b.m ? -1 : 1) : a.w > b.w ? -1 : 1));
    const owner = ranked.find(({ m }) => load.get(m)! < cap)!.m;
    load.set(owner, load.get(owner)! + 1);
    owners.push(owner);
  }
  return owners;
}
