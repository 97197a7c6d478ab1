import { db } from '@/server/storage/db';

export const dynamic = 'force-dynamic';

export default async function HomePage() {
  const tenants = await db().tenant.findMany({ orderBy: { name: 'asc' } });
  return (
    <main>
      <h1>Crowdflow</h1>
      <p className="muted">Visual journeys over very large crowds.</p>
      <h2>Tenants</h2>
      {tenants.length === 0 ? (
        <p className="muted">No tenants yet. Create one with POST /api/v1/tenants.</p>
      ) : (
        <table>
          <thead>
            <tr><th>Name</th><th>Partitions</th><th>Created</th></tr>
          </thead>
          <tbody>
            {tenants.map((t) => (
              <tr key={t.id} data-testid="tenant-row"><td>{t.name}</td><td>{t.partitions}</td><td>{t.createdAt.toISOString()}</td></tr>
            ))}
          </tbody>
        </table>
      )}
    </main>
  );
}
