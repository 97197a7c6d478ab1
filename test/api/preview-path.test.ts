import { beforeAll, describe, expect, it } from 'vitest';
import { api, createTenant, expectError } from '../helpers/api';
import { waitFor } from '../helpers/wait-for';

// "Preview one user's path" (issue 32 §2): POST …/workflows/{id}/preview-path walks one user through the workflow as
// the engine would move them now, from their profile, the crowds and the conditions (events pretended), and moves
// no one.

type Tenant = Awaited<ReturnType<typeof createTenant>>;

const definition = {
  steps: [
    {
      name: 'welcome',
      kind: 'branch',
      branches: [
        { condition: 'event.type == "purchase" && event.data.plan == "pro"', next: 'pro' },
        { condition: 'event.type == "purchase"', next: 'customer' },
      ],
      timeout: { after: '2d', next: 'nudge' },
    },
    { name: 'nudge', kind: 'direct', next: 'route' },
    {
      name: 'route',
      kind: 'branch',
      branches: [
        { condition: 'profile.country == "NL"', next: 'dutch' },
        { condition: 'inCrowd("vip")', next: 'vip' },
        { condition: 'true', next: 'others' },
      ],
    },
    { name: 'pro', kind: 'direct' },
    { name: 'customer', kind: 'direct' },
    { name: 'dutch', kind: 'direct' },
    { name: 'vip', kind: 'direct' },
    { name: 'others', kind: 'direct' },
  ],
};

let tenant: Tenant;
let workflowId = '';
const preview = (body: unknown, token = tenant.key) => api('POST', `/tenants/${tenant.name}/workflows/${workflowId}/preview-path`, { token, body });
const route = (result: { body: { hops: { from: string; to: string }[] } }) => result.body.hops.map((hop) => `${hop.from}->${hop.to}`);

describe('previewing one user’s path', () => {
  beforeAll(async () => {
    tenant = await createTenant(2);
    const base = `/tenants/${tenant.name}`;
    expect((await api('PUT', `${base}/crowds/vip`, { body: '2\n', headers: { 'content-type': 'text/plain' } })).status).toBeLessThan(300);
    expect((await api('PUT', `${base}/crowds/launch`, { body: '1\n2\n3\n4\n', headers: { 'content-type': 'text/plain' } })).status).toBeLessThan(300);
    const profiles = await api('POST', `${base}/profiles`, {
      body: [
        { user: 1, attributes: { country: 'NL' } },
        { user: 4, attributes: { country: 'DE' } },
      ],
    });
    expect(profiles.status, JSON.stringify(profiles.body)).toBe(200);
    const saved = await api('POST', `${base}/workflows`, { body: { name: 'Preview journey', definition } });
    expect(saved.status, JSON.stringify(saved.body)).toBe(201);
    workflowId = saved.body.id;
  });

  it('walks a user from the entry step by profile and crowd when no instance runs', async () => {
    const dutch = await preview({ user: 1 });
    expect(dutch.status, JSON.stringify(dutch.body)).toBe(200);
    expect(dutch.body).toMatchObject({
      user: 1,
      workflowId,
      version: 1,
      instanceId: null,
      startsFrom: 'entry',
      start: 'welcome',
      eventsUsed: 0,
      tooCostly: [],
    });
    expect(dutch.body.hops).toEqual([
      { from: 'welcome', to: 'nudge', by: 'timeout', after: '2d' },
      { from: 'nudge', to: 'route', by: 'next' },
      { from: 'route', to: 'dutch', by: 'branch', branch: 0, condition: 'profile.country == "NL"' },
    ]);
    expect(dutch.body.end).toEqual({ step: 'dutch', reason: 'exit' });
    // user 2 has no profile but is in the crowd vip; user 4 is neither Dutch nor vip
    expect(route(await preview({ user: 2 }))).toEqual(['welcome->nudge', 'nudge->route', 'route->vip']);
    expect(route(await preview({ user: 4 }))).toEqual(['welcome->nudge', 'nudge->route', 'route->others']);
  });

  it('offers pretended events, in order, to the step waiting for one', async () => {
    const pro = await preview({ user: 4, events: [{ type: 'purchase', data: { plan: 'pro' } }] });
    expect(pro.body.hops).toEqual([{ from: 'welcome', to: 'pro', by: 'branch', branch: 0, event: 0, condition: definition.steps[0].branches![0].condition }]);
    expect(pro.body.eventsUsed).toBe(1);
    // an event no branch takes is used up, the next one moves the user
    const buyer = await preview({ user: 4, events: [{ type: 'browse' }, { type: 'purchase', data: { plan: 'basic' } }, { type: 'purchase' }] });
    expect(buyer.body.hops).toMatchObject([{ from: 'welcome', to: 'customer', by: 'branch', branch: 1, event: 1 }]);
    expect(buyer.body.eventsUsed).toBe(2);
    expect(buyer.body.end).toEqual({ step: 'customer', reason: 'exit' });
  });

  it('starts from the step the user is in while an instance runs, and moves nobody', async () => {
    const started = await api('POST', `/tenants/${tenant.name}/workflows/${workflowId}/start`, { body: { crowd: 'launch' } });
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    const instanceId = started.body.instanceId as string;
    expect((await api('GET', `/procedures/${encodeURIComponent(started.body.procedureId)}?wait=20`)).body.state).toBe('done');
    expect((await api('POST', '/events', { token: tenant.key, body: { events: [{ user: 3, type: 'purchase' }] } })).status).toBe(202);
    await waitFor(
      'user 3 to buy',
      () => api('GET', `/tenants/${tenant.name}/users/3`),
      (where) => where.body.instances[0]?.step === 'customer',
    );
    // Where a user is comes from the committed journal; the counts from what the engine published after that commit,
    // a message later: the check below compares counts before and after the previews, so it starts from published ones.
    await waitFor(
      "user 3's move in the counts",
      () => api('GET', `/tenants/${tenant.name}/instances/${instanceId}/counts`),
      (counts) => counts.body.steps?.customer === 1,
    );

    const bought = await preview({ user: 3, events: [{ type: 'purchase', data: { plan: 'pro' } }] });
    expect(bought.body).toMatchObject({
      instanceId,
      startsFrom: 'current',
      start: 'customer',
      hops: [],
      end: { step: 'customer', reason: 'exit' },
      eventsUsed: 0,
    });
    const waiting = await preview({ user: 1, events: [{ type: 'purchase', data: { plan: 'pro' } }] });
    expect(waiting.body).toMatchObject({ instanceId, startsFrom: 'current', start: 'welcome', eventsUsed: 1 });
    expect(route(waiting)).toEqual(['welcome->pro']);
    // someone outside the crowd is walked as if entering now
    expect((await preview({ user: 99 })).body).toMatchObject({ startsFrom: 'entry', start: 'welcome' });

    // the preview moved nobody: user 1 still waits in welcome, and the journal holds only user 3's move
    expect((await api('GET', `/tenants/${tenant.name}/users/1`)).body.instances).toEqual([{ instanceId, workflowId, step: 'welcome' }]);
    const counts = await api('GET', `/tenants/${tenant.name}/instances/${instanceId}/counts`);
    expect(counts.body.steps).toMatchObject({ welcome: 3, customer: 1, pro: 0 });
  });

  it('refuses what is not a preview, and needs the read scope', async () => {
    expect(expectError(await preview({ user: -1 }), 400, 'validation_failed').message).toMatch(/user/);
    expect(expectError(await preview({ user: 1, events: Array.from({ length: 21 }, () => ({ type: 'x' })) }), 400, 'validation_failed').message).toMatch(
      /events/,
    );
    expect(expectError(await preview({ user: 1, events: [{ type: '' }] }), 400, 'validation_failed').message).toMatch(/type/);
    expect(expectError(await preview({ user: 1, extra: true }), 400, 'validation_failed').message).toMatch(/extra/);
    const missing = await api('POST', `/tenants/${tenant.name}/workflows/wf_nosuch/preview-path`, { token: tenant.key, body: { user: 1 } });
    expectError(missing, 404, 'not_found');
    const ingestOnly = await api('POST', `/tenants/${tenant.name}/keys`, { body: { name: 'ingest', scopes: ['ingest'] } });
    expect((await preview({ user: 1 }, ingestOnly.body.secret)).status).toBe(403);
    const readOnly = await api('POST', `/tenants/${tenant.name}/keys`, { body: { name: 'reader', scopes: ['read'] } });
    expect((await preview({ user: 1 }, readOnly.body.secret)).status).toBe(200);
  });
});
