import { db } from './app-db';

/** The Tenant row a test's rows belong to (every tenant-owned table references it); kept when it exists. */
export async function tenantRow(id: string, partitions = 1): Promise<string> {
  await db().tenant.upsert({ where: { id }, create: { id, name: id.toLowerCase().replace(/[^a-z0-9_-]/g, ''), partitions }, update: {} });
  return id;
}
