import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parseDatabaseUrl } from '../../server/storage/database-url';
import { api, createTenant, expectError, uniqueName } from '../helpers/api';

// The procedures API over real HTTP. Procedures are written straight into the server's database under a type the
// server has not registered, so its runner leaves them alone and each test controls their state exactly.

type Row = {
  id: string;
  type: string;
  state: string;
  tenantId?: string | null;
  workflowId?: string | null;
  error?: string | null;
  step?: number;
  parentId?: string | null;
};

interface ServerDb {
  insert(row: Row): Promise<void>;
  setState(id: string, state: string): Promise<void>;
  close(): Promise<void>;
}

function openServerDb(): ServerDb {
  const target = parseDatabaseUrl(inject('serverDatabaseUrl'));
  const columns = ['id', 'type', 'state', 'tenantId', 'workflowId', 'error', 'step', 'lockKeys', 'data', 'createdAt', 'updatedAt', 'parentId'];
  const values = (row: Row, now: unknown) => [
    row.id,
    row.type,
    row.state,
    row.tenantId ?? null,
    row.workflowId ?? null,
    row.error ?? null,
    row.step ?? 0,
    '[]',
    '{"test":true}',
    now,
    now,
    row.parentId ?? null,
  ];
  const quoted = columns.map((c) => `"${c}"`).join(', ');
  if (target.provider === 'sqlite') {
    const sqlite = new Database(target.file, { timeout: 30_000 });
    const now = () => new Date().toISOString().replace('Z', '+00:00'); // the adapter's own DATETIME format
    return {
      insert: async (row) =>
        void sqlite.prepare(`INSERT INTO "Procedure" (${quoted}) VALUES (${columns.map(() => '?').join(', ')})`).run(...values(row, now())),
      setState: async (id, state) => void sqlite.prepare('UPDATE "Procedure" SET "state" = ?, "finishedAt" = ? WHERE "id" = ?').run(state, now(), id),
      close: async () => void sqlite.close(),
    };
  }
  const pool = new pg.Pool({ connectionString: target.connectionString, max: 2 });
  const table = `"${target.schema}"."Procedure"`;
  return {
    insert: async (row) =>
      void (await pool.query(`INSERT INTO ${table} (${quoted}) VALUES (${columns.map((_, i) => `$${i + 1}`).join(', ')})`, values(row, new Date()))),
    setState: async (id, state) => void (await pool.query(`UPDATE ${table} SET "state" = $1, "finishedAt" = $2 WHERE "id" = $3`, [state, new Date(), id])),
    close: () => pool.end(),
  };
}

const TYPE = 'test.api-only';
let server: ServerDb;
let tenant: Awaited<ReturnType<typeof createTenant>>;
let other: Awaited<ReturnType<typeof createTenant>>;
const workflow = uniqueName('wf');
const ids = {
  running: uniqueName('proc:running'),
  failed: uniqueName('proc:failed'),
  done: uniqueName('proc:done'),
  foreign: uniqueName('proc:foreign'),
  system: uniqueName('proc:system'),
};

beforeAll(async () => {
  server = openServerDb();
  [tenant, other] = await Promise.all([createTenant(2), createTenant(2)]);
  await server.insert({ id: ids.running, type: TYPE, state: 'running', tenantId: tenant.id, workflowId: workflow });
  await server.insert({
    id: ids.failed,
    type: TYPE,
    state: 'failed',
    tenantId: tenant.id,
    workflowId: workflow,
    step: 2,
    error: JSON.stringify({ message: 'quota exceeded' }),
  });
  await server.insert({ id: ids.done, type: `${TYPE}.other`, state: 'done', tenantId: tenant.id });
  await server.insert({ id: ids.foreign, type: TYPE, state: 'failed', tenantId: other.id, error: JSON.stringify({ message: 'not yours' }) });
  await server.insert({ id: ids.system, type: TYPE, state: 'done' });
});

afterAll(() => server.close());

const path = (id: string, suffix = '') => `/procedures/${encodeURIComponent(id)}${suffix}`;

describe('procedures API', () => {
  it('lists with filters; a tenant key sees only its tenant’s procedures', async () => {
    const all = await api('GET', '/procedures?limit=500');
    expect(all.status).toBe(200);
    const allIds = all.body.procedures.map((p: { id: string }) => p.id);
    expect(allIds).toEqual(expect.arrayContaining(Object.values(ids)));

    const byWorkflow = await api('GET', `/procedures?workflow=${workflow}`);
    expect(byWorkflow.body.procedures.map((p: { id: string }) => p.id).sort()).toEqual([ids.failed, ids.running].sort());
    const failedOfType = await api('GET', `/procedures?type=${TYPE}&state=failed`, { token: tenant.key });
    expect(failedOfType.body.procedures.map((p: { id: string }) => p.id)).toEqual([ids.failed]);
    expect(failedOfType.body.procedures[0]).toMatchObject({
      state: 'failed',
      step: 2,
      error: 'quota exceeded',
      rollbackError: null,
      tenantId: tenant.id,
      data: { test: true },
    });

    const mine = (await api('GET', '/procedures', { token: tenant.key })).body.procedures.map((p: { id: string }) => p.id);
    expect(mine.sort()).toEqual([ids.done, ids.failed, ids.running].sort());
    expectError(await api('GET', '/procedures', { token: null }), 401, 'unauthorized');
  });

  it('refuses bad filters and bad waits with a 400 naming the parameter', async () => {
    expect(expectError(await api('GET', '/procedures?state=sleeping'), 400, 'validation_failed').message).toMatch(/^state/);
    expect(expectError(await api('GET', '/procedures?limit=0'), 400, 'validation_failed').message).toMatch(/^limit/);
    expect(expectError(await api('GET', '/procedures?colour=red'), 400, 'validation_failed').message).toMatch(/colour/);
    for (const wait of ['61', '-1', 'soon']) {
      expect(expectError(await api('GET', `${path(ids.done)}?wait=${wait}`), 400, 'validation_failed').message).toMatch(/^wait/);
    }
  });

  it('gets one procedure; unknown ids and other tenants’ procedures are 404', async () => {
    const got = await api('GET', path(ids.running));
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ id: ids.running, type: TYPE, state: 'running', workflowId: workflow, finishedAt: null });
    expectError(await api('GET', path('no-such-procedure')), 404, 'not_found');
    expectError(await api('GET', path(ids.foreign), { token: tenant.key }), 404, 'not_found');
    expectError(await api('GET', path(ids.system), { token: tenant.key }), 404, 'not_found');
    const own = await api('GET', path(ids.foreign), { token: other.key });
    expect(own.status).toBe(200);
    expect(own.body).toMatchObject({ id: ids.foreign, error: 'not yours' });
  });

  it('gets a procedure with its committed steps and its children; a real start shows state, attempts and next attempt', async () => {
    const parent = uniqueName('proc:parent');
    await server.insert({ id: parent, type: TYPE, state: 'running', tenantId: tenant.id });
    await server.insert({
      id: `${parent}:1.0`,
      type: TYPE,
      state: 'failed',
      tenantId: tenant.id,
      parentId: parent,
      error: JSON.stringify({ message: 'child broke', attempts: 2 }),
    });
    const got = await api('GET', path(parent), { token: tenant.key });
    expect(got.body).toMatchObject({ id: parent, steps: [], children: [{ id: `${parent}:1.0`, state: 'failed', error: 'child broke', parentId: parent }] });

    const base = `/tenants/${tenant.name}`;
    expect((await api('PUT', `${base}/crowds/everyone`, { body: '1\n2\n3', headers: { 'content-type': 'text/plain' } })).status).toBe(201);
    const definition = {
      steps: [
        { name: 'entry', kind: 'direct', next: 'end' },
        { name: 'end', kind: 'direct' },
      ],
    };
    const created = await api('POST', `${base}/workflows`, { body: { name: uniqueName('steps'), definition } });
    const started = await api('POST', `${base}/workflows/${created.body.id}/start`, { body: { crowd: 'everyone' } });
    const done = await api('GET', `${path(started.body.procedureId)}?wait=30`, { token: tenant.key });
    expect(done.body).toMatchObject({
      state: 'done',
      attempts: 0,
      nextAttemptAt: null,
      waitingSince: null,
      error: null,
      children: [],
      output: { userCount: 3 },
    });
    expect(done.body.steps).toEqual([{ step: 1, state: 'done', at: expect.any(String) }]);
  });

  it('long-polls: returns as soon as the procedure finishes, or when the wait elapses', async () => {
    const started = Date.now();
    const elapsed = await api('GET', `${path(ids.running)}?wait=1`);
    expect(elapsed.body.state).toBe('running');
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);

    const id = uniqueName('proc:poll');
    await server.insert({ id, type: TYPE, state: 'running', tenantId: tenant.id });
    const polling = api('GET', `${path(id)}?wait=30`, { token: tenant.key });
    const pollStarted = Date.now();
    await new Promise((r) => setTimeout(r, 300));
    await server.setState(id, 'done');
    const finished = await polling;
    expect(finished.status).toBe(200);
    expect(finished.body.state).toBe('done');
    expect(Date.now() - pollStarted).toBeLessThan(10_000);
  });

  it('retries a failed procedure (409 for any other state, 404 for another tenant’s)', async () => {
    const conflictError = expectError(await api('POST', path(ids.running, '/retry')), 409, 'conflict');
    expect(conflictError.message).toMatch(/running/);
    expectError(await api('POST', path(ids.done, '/retry')), 409, 'conflict');
    expectError(await api('POST', path('no-such-procedure', '/retry')), 404, 'not_found');
    expectError(await api('POST', path(ids.foreign, '/retry'), { token: tenant.key }), 404, 'not_found');

    const retried = await api('POST', path(ids.failed, '/retry'), { token: tenant.key });
    expect(retried.status).toBe(200);
    expect(retried.body).toMatchObject({ id: ids.failed, state: 'running', step: 2, error: null, attempts: 0, finishedAt: null });
    expectError(await api('POST', path(ids.failed, '/retry')), 409, 'conflict');
  });
});
