import { spawn } from 'node:child_process';
import { afterAll, expect, it } from 'vitest';
import { freePort, serverArguments, waitUntilUp } from '../helpers/next-server';
import { db } from '../helpers/app-db';

// A real server (server/main.ts) on this file's database is stopped the way a deploy or Ctrl-C stops it. It must hand back its
// partition leases (after a last checkpoint), so the next server takes over at once instead of after the lease.
const ADMIN = 'shutdown-admin-token-0123456789';
let child: ReturnType<typeof spawn> | undefined;
afterAll(() => void child?.kill('SIGKILL'));

it('SIGTERM hands back every partition lease and checkpoints the running instance before the server exits', async () => {
  const port = await freePort();
  let output = '';
  child = spawn(process.execPath, serverArguments(port), {
    env: { ...process.env, CROWDFLOW_ADMIN_TOKEN: ADMIN, NODE_ENV: 'production' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (d) => (output += d));
  child.stderr?.on('data', (d) => (output += d));
  const base = `http://127.0.0.1:${port}/api/v1`;
  await waitUntilUp(`http://127.0.0.1:${port}`, child, () => output, { timeoutMs: 60_000, pollMs: 200 });
  const call = async (method: string, path: string, body?: unknown) => {
    const headers: Record<string, string> = { authorization: `Bearer ${ADMIN}` };
    if (body !== undefined) headers['content-type'] = typeof body === 'string' ? 'text/plain' : 'application/json';
    const response = await fetch(`${base}${path}`, { method, headers, body: body === undefined || typeof body === 'string' ? body : JSON.stringify(body) });
    const text = await response.text();
    expect(response.status, `${method} ${path}: ${text}`).toBeLessThan(300);
    return JSON.parse(text);
  };
  const tenant = await call('POST', '/tenants', { name: 'shutdown', partitions: 3 });
  await call('PUT', '/tenants/shutdown/crowds/everyone', '1\n2\n3\n4\n5\n6');
  const workflow = await call('POST', '/tenants/shutdown/workflows', {
    name: 'w',
    definition: {
      steps: [
        {
          name: 'entry',
          kind: 'branch',
          branches: [
            { condition: 'event.type == "buy"', next: 'done' },
            { condition: 'event.type == "leave"', next: 'done' },
          ],
        },
        { name: 'done', kind: 'direct' },
      ],
    },
  });
  const { instanceId } = await call('POST', `/tenants/shutdown/workflows/${workflow.id}/start`, { crowd: 'everyone' });
  await expect.poll(async () => (await call('GET', `/tenants/shutdown/instances/${instanceId}`)).state, { timeout: 30_000 }).toBe('running');
  await call('POST', '/events', { tenant: 'shutdown', events: [{ user: 2, type: 'buy' }] });
  await expect.poll(async () => (await call('GET', `/tenants/shutdown/instances/${instanceId}/counts`)).steps.done, { timeout: 30_000 }).toBe(1);
  const partitions = () => db().partitionState.findMany({ where: { tenantId: tenant.id }, orderBy: { partition: 'asc' } });
  expect((await partitions()).map((p) => p.owner)).toEqual([expect.any(String), expect.any(String), expect.any(String)]);
  const lastSeq = Number((await db().journal.aggregate({ _max: { seq: true } }))._max.seq);

  // A studio tab watching counts: its event stream must not keep the stopping server alive.
  const stream = await fetch(`${base}/tenants/shutdown/instances/${instanceId}/counts/stream`, { headers: { authorization: `Bearer ${ADMIN}` } });
  const reader = stream.body!.getReader();
  expect(new TextDecoder().decode((await reader.read()).value)).toContain('event: counts');
  const streamEnded = (async () => {
    while (!(await reader.read()).done);
    return true;
  })().catch(() => true);

  const exited = new Promise<number | null>((resolve) => child!.once('exit', (code) => resolve(code)));
  child.kill('SIGTERM');
  expect(await exited).toBe(143);
  expect(await streamEnded).toBe(true);

  expect((await partitions()).map((p) => [p.owner, Number(p.leaseUntilMs)])).toEqual([
    [null, 0],
    [null, 0],
    [null, 0],
  ]);
  // Checkpoints include every journaled move, so the next owner replays nothing.
  const checkpoints = await db().shardCheckpoint.findMany({ where: { instanceId } });
  expect(checkpoints.map((c) => Number(c.journalSeq))).toEqual([lastSeq, lastSeq, lastSeq]);
});
