import roaring from 'roaring';
import { describe, expect, it } from 'vitest';
import { api, createTenant, expectError } from '../helpers/api';
import { waitFor } from '../helpers/wait-for';
import { serverSql } from '../helpers/server-db';

// The rows of issue 13's first table that bounded cost answers, on the real server over HTTP: each input gets its
// bounded outcome (answered at once, refused with a 4xx naming the limit, dead-lettered, followed to the end).

const { RoaringBitmap32 } = roaring;
type Tenant = Awaited<ReturnType<typeof createTenant>>;

/** Over HTTP on a loaded 2-core machine, generous; the inputs below blocked every tenant for 3.8-15 s before. */
const OTHER_TENANT_BOUND_MS = 2_000;

async function startInstance(tenant: Tenant, definition: object, users: number[]): Promise<string> {
  const base = `/tenants/${tenant.name}`;
  expect((await api('PUT', `${base}/crowds/all`, { body: users.join('\n'), headers: { 'content-type': 'text/plain' } })).status).toBeLessThan(300);
  const workflow = await api('POST', `${base}/workflows`, { body: { name: 'wf', definition } });
  expect(workflow.status, JSON.stringify(workflow.body)).toBe(201);
  const started = await api('POST', `${base}/workflows/${workflow.body.id}/start`, { body: { crowd: 'all' } });
  expect(started.status, JSON.stringify(started.body)).toBe(202);
  const procedure = await api('GET', `/procedures/${encodeURIComponent(started.body.procedureId)}?wait=30`);
  expect(procedure.body.state, JSON.stringify(procedure.body)).toBe('done');
  return started.body.instanceId;
}

const counts = async (tenant: Tenant, instanceId: string) => (await api('GET', `/tenants/${tenant.name}/instances/${instanceId}/counts`)).body.steps;

/** Times GET /tenants/{other} in a loop while `work` runs; returns the slowest answer (ms). */
async function slowestAnswerWhile(other: Tenant, work: Promise<unknown>): Promise<number> {
  let finished = false;
  const running = work.finally(() => (finished = true));
  let slowest = 0;
  do {
    const started = performance.now();
    expect((await api('GET', `/tenants/${other.name}`, { token: other.key })).status).toBe(200);
    slowest = Math.max(slowest, performance.now() - started);
  } while (!finished);
  await running;
  return slowest;
}

describe('bounded cost over HTTP', () => {
  it('matches "(a+)+$" in linear time; an event over the runtime budget is dead-lettered (list, inspect, discard) and the partition moves on', async () => {
    const [tenant, other] = [await createTenant(2), await createTenant(1)];
    const instanceId = await startInstance(
      tenant,
      {
        steps: [
          {
            name: 'entry',
            kind: 'branch',
            branches: [
              { condition: 'event.data.s.matches("(a+)+$")', next: 'matched' },
              { condition: 'true', next: 'other' },
            ],
          },
          { name: 'matched', kind: 'direct' },
          { name: 'other', kind: 'direct' },
        ],
      },
      [1, 2, 3],
    );
    const events = [
      { user: 1, type: 'e', data: { s: 'a'.repeat(27) + 'b' } }, // 9.3 s of backtracking before
      { user: 2, type: 'e', data: { s: 'aaa' } },
      { user: 3, type: 'e', data: { s: 'a'.repeat(2_000_000) + 'b' } }, // RE2 over 2 MB: over the runtime budget
    ];
    const applied = (async () => {
      expect((await api('POST', '/events', { token: tenant.key, body: { events } })).status).toBe(202);
      return waitFor(
        'counts',
        () => counts(tenant, instanceId),
        (s) => s.entry === 1,
      );
    })();
    expect(await slowestAnswerWhile(other, applied)).toBeLessThan(OTHER_TENANT_BOUND_MS);
    expect(await counts(tenant, instanceId)).toEqual({ entry: 1, matched: 1, other: 1 });

    const base = `/tenants/${tenant.name}/dead-letters`;
    const list = await waitFor(
      'dead letters',
      () => api('GET', base, { token: tenant.key }),
      (r) => r.status !== 200 || r.body.deadLetters.length > 0,
      { timeoutMs: 10_000 },
    );
    expect(list.status).toBe(200);
    expect(list.body.next).toBeNull();
    expect(list.body.deadLetters).toEqual([
      // Users 1–3 share id block 0, so partition 0 logged all three in one row: user 3's event is its third.
      expect.objectContaining({ instanceId, step: 'entry', partition: 0, logOffset: 1, eventIndex: 2, event: expect.objectContaining({ user: 3, type: 'e' }) }),
    ]);
    const [letter] = list.body.deadLetters;
    expect(letter.reason).toMatch(/^branches\[0\]\.condition: .* would cost [\d,]+ on this event; the runtime budget is 1,000,000 per evaluation$/);
    expect((await api('GET', `${base}/${letter.id}`, { token: tenant.key })).body).toEqual(letter);
    expect((await api('GET', `${base}/${letter.id}`, { token: other.key })).status).toBe(404); // another tenant's key
    expectError(await api('GET', `/tenants/${other.name}/dead-letters/${letter.id}`, { token: other.key }), 404, 'not_found');
    // The commit that set it aside moved the partition past it: a restart starts after it.
    const [state] = await serverSql<{ offset: unknown }>('SELECT "offset" FROM "PartitionState" WHERE "tenantId" = $1 AND "partition" = 0', [tenant.id]);
    expect(Number(state.offset)).toBe(1);
    expect((await api('DELETE', `${base}/${letter.id}`, { token: tenant.key })).status).toBe(204);
    expectError(await api('GET', `${base}/${letter.id}`, { token: tenant.key }), 404, 'not_found');
    expectError(await api('DELETE', `${base}/${letter.id}`, { token: tenant.key }), 404, 'not_found');
    expect((await api('GET', base, { token: tenant.key })).body.deadLetters).toEqual([]);
  });

  it('refuses at save a condition over the cost budget (the triple comprehension), naming the step and the budget, and an invalid RE2 pattern', async () => {
    const tenant = await createTenant(1);
    const save = (condition: string) =>
      api('POST', `/tenants/${tenant.name}/workflows`, {
        body: {
          name: 'costly',
          definition: {
            steps: [
              {
                name: 'wait',
                kind: 'branch',
                branches: [
                  { condition, next: 'done' },
                  { condition: 'true', next: 'done' },
                ],
              },
              { name: 'done', kind: 'direct' },
            ],
          },
        },
      });
    const triple = await save('event.data.a.exists(x, event.data.a.exists(y, event.data.a.exists(z, x + y + z == 0.0)))');
    expect(expectError(triple, 400, 'invalid_workflow').details).toEqual({
      problems: [
        {
          step: 'wait',
          code: 'condition_too_costly',
          message: expect.stringMatching(/^Step "wait" branches\[0\]\.condition is estimated to cost [\d,]+ per evaluation .* the budget is 1,000,000/),
        },
      ],
    });
    const lookbehind = await save('event.data.s.matches("(?<=a)b")');
    expect(expectError(lookbehind, 400, 'invalid_workflow').message).toMatch(
      /Step "wait" branches\[0\]\.condition is not a valid condition: matches pattern .* is not a valid RE2 regular expression/,
    );
  });

  it('checks what a roaring upload becomes before storing it: 2^27 users in 29 KB and 2^32 users in 925 KB are refused naming the limit', async () => {
    const tenant = await createTenant(1);
    const upload = (bitmap: InstanceType<typeof RoaringBitmap32>) =>
      api('PUT', `/tenants/${tenant.name}/crowds/huge`, { body: bitmap.serialize('portable'), headers: { 'content-type': 'application/octet-stream' } });
    const full = (end: number) => {
      const bitmap = new RoaringBitmap32();
      bitmap.addRange(0, end);
      bitmap.runOptimize();
      return bitmap;
    };
    const rss = process.memoryUsage().rss;
    const small = full(2 ** 27);
    expect(small.serialize('portable').byteLength).toBeLessThan(30_000);
    expect(expectError(await upload(small), 413, 'payload_too_large').message).toBe(
      "The crowd would hold 134,217,728 users; this tenant's crowds may hold at most 100,000,000 (limit maxCrowdUsers)",
    );
    // Raised to the most a tenant may have, the upload cap still bounds what an upload becomes.
    expect((await api('PUT', `/tenants/${tenant.name}/limits`, { body: { maxCrowdUsers: 2 ** 32 } })).body.maxCrowdUsers).toBe(2 ** 32);
    expect(expectError(await upload(full(2 ** 32)), 413, 'payload_too_large').message).toMatch(
      /^The upload would become 4,294,967,296 users; an upload of at most [\d,]+ bytes \(CROWDFLOW_MAX_UPLOAD_BYTES\) may become at most [\d,]+ users$/,
    );
    expectError(await api('GET', `/tenants/${tenant.name}/crowds/huge`), 404, 'not_found');
    expect(process.memoryUsage().rss - rss).toBeLessThan(256 * 1024 * 1024);
  });

  it('refuses to start an instance over the tenant limit, naming it; limits are per tenant and only the admin changes them', async () => {
    const tenant = await createTenant(1);
    expect((await api('GET', `/tenants/${tenant.name}/limits`, { token: tenant.key })).body).toMatchObject({
      maxCrowdUsers: 100_000_000,
      maxInstanceUsers: 100_000_000,
      minTimerPeriodSeconds: 60,
      journalRetentionHours: 168,
      journalMaxRows: 50_000_000,
      requestsPerSecond: 2_000,
      requestBurst: 4_000,
    });
    expectError(await api('PUT', `/tenants/${tenant.name}/limits`, { token: tenant.key, body: { maxInstanceUsers: 2 } }), 403, 'forbidden');
    expect((await api('PUT', `/tenants/${tenant.name}/limits`, { body: { maxInstanceUsers: 2 } })).body.maxInstanceUsers).toBe(2);
    expectError(await api('PUT', `/tenants/${tenant.name}/limits`, { body: { maxInstanceUsers: 0 } }), 400, 'validation_failed');
    const base = `/tenants/${tenant.name}`;
    await api('PUT', `${base}/crowds/three`, { body: '1\n2\n3', headers: { 'content-type': 'text/plain' } });
    const workflow = await api('POST', `${base}/workflows`, { body: { name: 'w', definition: { steps: [{ name: 'a', kind: 'direct' }] } } });
    const refused = await api('POST', `${base}/workflows/${workflow.body.id}/start`, { body: { crowd: 'three' } });
    expect(expectError(refused, 422, 'unprocessable').message).toBe(
      "The instance would run over 3 users; this tenant's instances may hold at most 2 (limit maxInstanceUsers)",
    );
    expect((await api('PUT', `${base}/limits`, { body: { maxInstanceUsers: null } })).body.maxInstanceUsers).toBe(100_000_000);
    expect((await api('POST', `${base}/workflows/${workflow.body.id}/start`, { body: { crowd: 'three' } })).status).toBe(202);
  });

  it('follows a chain of 1,000 direct steps to its end', async () => {
    const tenant = await createTenant(2);
    const steps = Array.from({ length: 1_000 }, (_, i) => ({ name: `s${i}`, kind: 'direct', ...(i < 999 ? { next: `s${i + 1}` } : {}) }));
    const instanceId = await startInstance(tenant, { steps }, [1, 2, 3]);
    const reached = await waitFor(
      'counts',
      () => counts(tenant, instanceId),
      (s) => s.s999 === 3,
    );
    expect(Object.entries(reached).filter(([, n]) => n !== 0)).toEqual([['s999', 3]]);
  });

  it('refuses a timer firing more often than the tenant minimum, naming the step and the limit', async () => {
    const tenant = await createTenant(1);
    const definition = {
      steps: [
        { name: 'tick', kind: 'timer', cron: '* * * * * *', next: 'done' },
        { name: 'done', kind: 'direct' },
      ],
    };
    const save = () => api('POST', `/tenants/${tenant.name}/workflows`, { body: { name: 'ticker', definition } });
    expect(expectError(await save(), 400, 'invalid_workflow').details).toEqual({
      problems: [
        {
          step: 'tick',
          code: 'timer_too_frequent',
          message: `Step "tick" cron "* * * * * *" fires 1 s apart; this tenant's timers may fire at most once every 60 s (limit minTimerPeriodSeconds)`,
        },
      ],
    });
    await api('PUT', `/tenants/${tenant.name}/limits`, { body: { minTimerPeriodSeconds: 1 } });
    expect((await save()).status).toBe(201);
  });
});
