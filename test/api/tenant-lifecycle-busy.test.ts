import { describe, expect, it } from 'vitest';
import { api, createTenant, uniqueName } from '../helpers/api';

// Issue 36: on SQLite, `POST /tenants/T/workflows` right after the tenant was created, and `DELETE /tenants/T`,
// answered 503 "database was busy for longer than a request may wait" after 0.07-4 s, most often while two clients
// created tenants at once. A 503 means the database stayed busy past the documented 30 s (or PostgreSQL lost the
// connection): nothing like that happens here, so every call of these lifecycles must succeed.

const definition = {
  steps: [
    {
      name: 'entry',
      kind: 'branch',
      branches: [
        { condition: 'event.type == "buy"', next: 'done' },
        { condition: 'true', next: 'later' },
      ],
    },
    { name: 'later', kind: 'timer', cron: '0 0 21 * * *', next: 'done' },
    { name: 'done', kind: 'direct' },
  ],
};

const LIFECYCLES = 40;

type Outcome = { call: string; status: number; ms: number; body: unknown };

/** One client's tenant lifecycles, one after another: create, a workflow at once, a key, delete. */
async function client(lifecycles: number, outcomes: Outcome[]): Promise<void> {
  const timed = async (call: string, method: string, path: string, body?: unknown) => {
    const started = performance.now();
    const result = await api(method, path, body === undefined ? {} : { body });
    outcomes.push({ call, status: result.status, ms: Math.round(performance.now() - started), body: result.body });
    return result;
  };
  for (let i = 0; i < lifecycles; i++) {
    const name = uniqueName('life');
    const created = await timed('create tenant', 'POST', '/tenants', { name, partitions: 8 });
    if (created.status !== 201) continue;
    await timed('create workflow', 'POST', `/tenants/${name}/workflows`, { name: 'w', definition });
    await timed('create key', 'POST', `/tenants/${name}/keys`, { name: 'k', scopes: ['read'] });
    await timed('delete tenant', 'DELETE', `/tenants/${name}`);
  }
}

// SQLite only: the cause (Prisma's SQLite adapter sharing its one connection across transactions) does not exist on
// PostgreSQL, where the same 320 calls beside the imports took over 300 s inside the full suite and guard nothing new.
const onSqlite = (process.env.CROWDFLOW_TEST_PROVIDER ?? 'sqlite') === 'sqlite';

describe.runIf(onSqlite)('tenant lifecycles of two concurrent clients', () => {
  it('create a tenant, a workflow at once, a key, delete the tenant: never a 503 or another failure', { timeout: 300_000 }, async () => {
    const outcomes: Outcome[] = [];
    // Profile imports of another tenant meanwhile: the engine thread commits chunk after chunk of rows, holding
    // SQLite's write lock much of the time (the issue saw the 503s under load).
    const busy = await createTenant(8);
    const csv = `user,plan,age\n${Array.from({ length: 50_000 }, (_, i) => `${i},p${i % 7},${i % 90}`).join('\n')}\n`;
    let done = false;
    const load = (async () => {
      while (!done) {
        const imported = await api('POST', `/tenants/${busy.name}/profiles/import`, { body: csv, headers: { 'content-type': 'text/csv' } });
        outcomes.push({ call: 'import', status: imported.status, ms: 0, body: imported.status === 200 ? null : imported.body });
      }
    })();
    await Promise.all([client(LIFECYCLES, outcomes), client(LIFECYCLES, outcomes)]).finally(() => (done = true));
    await load;
    const expected: Record<string, number> = { 'create tenant': 201, 'create workflow': 201, 'create key': 201, 'delete tenant': 204, import: 200 };
    const failed = outcomes.filter((o) => o.status !== expected[o.call]);
    expect(failed.map((o) => `${o.call}: ${o.status} after ${o.ms} ms ${JSON.stringify(o.body)}`)).toEqual([]);
    expect(outcomes.filter((o) => o.call !== 'import')).toHaveLength(2 * LIFECYCLES * 4);
  });
});
