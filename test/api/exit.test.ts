// Exit criteria over real HTTP (issue 37 §6): a journey whose users leave when they unsubscribe, or at once when their
// profile says they cancelled. The counts (and their stream) say how many exited early from each step, the step export
// `users=exited` lists them, notifications show each exit as a move to `$exit`, and bad criteria are 4xx naming them.
import { describe, expect, it } from 'vitest';
import { api, baseUrl, createTenant, expectError } from '../helpers/api';
import { waitFor } from '../helpers/wait-for';
import { countsMessageWhere, type CountsMessage } from '../helpers/counts-stream';

const journey = (exit?: unknown) => ({
  steps: [
    { name: 'welcome', kind: 'direct', next: 'wait' },
    { name: 'wait', kind: 'branch', branches: [{ condition: 'event.type == "buy"', next: 'bought' }] },
    { name: 'bought', kind: 'direct', enterAction: 'thanks' },
  ],
  ...(exit === undefined ? {} : { exit }),
});
const ids = (text: unknown) =>
  String(text)
    .split('\n')
    .filter(Boolean)
    .map(Number)
    .sort((a, b) => a - b);
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

/** The first counts message of the stream at `path` that satisfies `done`, or null within 10 s. */
async function streamedCounts(path: string, key: string, done: (counts: CountsMessage) => boolean) {
  const response = await fetch(`${baseUrl()}/api/v1${path}`, { headers: { authorization: `Bearer ${key}` } });
  expect(response.status).toBe(200);
  return countsMessageWhere(response, done);
}

describe('exit criteria', () => {
  it('take users out from the step they are in, counted, streamed, exported and notified; bad criteria are 400s', async () => {
    const tenant = await createTenant(2);
    const base = `/tenants/${tenant.name}`;
    const users = range(1, 60);
    expect((await api('PUT', `${base}/crowds/launch`, { body: users.join('\n'), headers: { 'content-type': 'text/plain' } })).status).toBeLessThan(300);
    const cancelled = users.filter((u) => u % 10 === 0);
    const profiles = users.map((user) => ({ user, attributes: { plan: cancelled.includes(user) ? 'cancelled' : 'pro' } }));
    expect((await api('POST', `${base}/profiles`, { token: tenant.key, body: profiles })).status).toBe(200);

    // Validation through validateWorkflow() and the condition gate: each problem names exit.condition.
    const invalid = expectError(
      await api('POST', `${base}/workflows`, { body: { name: 'broken', definition: journey({ condition: 'event.type ==' }) } }),
      400,
      'invalid_workflow',
    );
    expect(invalid.message).toContain('exit.condition is not a valid condition');
    const costly = expectError(
      await api('POST', `${base}/workflows`, {
        body: {
          name: 'costly',
          definition: journey({ condition: 'event.data.a.exists(x, event.data.a.exists(y, event.data.a.exists(z, x + y + z == 0.0)))' }),
        },
      }),
      400,
      'invalid_workflow',
    );
    expect((costly.details as { problems: unknown[] }).problems).toContainEqual(expect.objectContaining({ step: null, code: 'condition_too_costly' }));
    const empty = expectError(await api('POST', `${base}/workflows`, { body: { name: 'empty', definition: journey({}) } }), 400, 'invalid_workflow');
    expect(empty.message).toContain('exit.condition');

    const criteria = 'event.type == "unsubscribe" || profile.plan == "cancelled"';
    const created = await api('POST', `${base}/workflows`, { body: { name: 'leaving', definition: journey({ condition: criteria }) } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.definition.exit).toEqual({ condition: criteria });
    const started = await api('POST', `${base}/workflows/${created.body.id}/start`, { body: { crowd: 'launch' } });
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    const { instanceId } = started.body;
    const countsPath = `${base}/instances/${instanceId}/counts`;
    // The criteria read `event`, so they are checked on events only: the cancelled users wait like the others.
    await waitFor(
      'the instance to run',
      async () => (await api('GET', countsPath, { token: tenant.key })).body,
      (body) => body.total === 60,
    );

    // Unsubscribes and cancelled users' events take them out of `wait`; a buy moves the others on.
    const events = [
      ...range(1, 5).map((user) => ({ user, type: 'unsubscribe' })),
      ...cancelled.slice(0, 2).map((user) => ({ user, type: 'buy' })),
      ...range(11, 13).map((user) => ({ user, type: 'buy' })),
    ];
    expect((await api('POST', '/events', { token: tenant.key, body: { events } })).status).toBe(202);
    const streamed = await streamedCounts(`${countsPath}/stream`, tenant.key, (counts) => counts.exited === 7);
    expect(streamed).toMatchObject({ exited: 7, exitedFrom: { welcome: 0, wait: 7, bought: 0 }, steps: { wait: 50, bought: 3 } });
    expect((await api('GET', countsPath, { token: tenant.key })).body).toMatchObject({ exited: 7, exitedFrom: { wait: 7 } });

    const exported = await api('GET', `${base}/instances/${instanceId}/steps/wait/export?users=exited`, { token: tenant.key });
    expect(exported.status).toBe(200);
    expect(ids(exported.body)).toEqual([1, 2, 3, 4, 5, 10, 20]);
    expect(exported.headers.get('content-disposition')).toContain('-wait-exited-');
    expect(ids((await api('GET', `${base}/instances/${instanceId}/steps/bought/export?users=exited`, { token: tenant.key })).body)).toEqual([]);

    const notifications = (await api('GET', '/notifications?limit=1000', { token: tenant.key })).body.items.filter(
      (n: { instanceId: string }) => n.instanceId === instanceId,
    );
    const exits = notifications.filter((n: { to: string }) => n.to === '$exit');
    expect(exits.map((n: { user: number }) => n.user).sort((a: number, b: number) => a - b)).toEqual([1, 2, 3, 4, 5, 10, 20]);
    expect(exits.every((n: { from: string; leaveAction: null; enterAction: null }) => n.from === 'wait' && !n.leaveAction && !n.enterAction)).toBe(true);

    // The path preview ends where the criteria would take a user out: on the pretended event that meets them.
    const previewOf = async (workflowId: string, body: object) =>
      (await api('POST', `${base}/workflows/${workflowId}/preview-path`, { token: tenant.key, body })).body;
    expect((await previewOf(created.body.id, { user: 31, events: [{ type: 'open' }, { type: 'unsubscribe' }, { type: 'buy' }] })).end).toEqual({
      step: 'wait',
      reason: 'exited',
      event: 1,
    });

    // Criteria over profiles only are checked as users enter: the cancelled users leave at the start, from the entry step.
    const atOnce = await api('POST', `${base}/workflows`, { body: { name: 'at once', definition: journey({ condition: 'profile.plan == "cancelled"' }) } });
    const second = await api('POST', `${base}/workflows/${atOnce.body.id}/start`, { body: { crowd: 'launch' } });
    const secondCounts = await waitFor(
      'the second instance to run',
      async () => (await api('GET', `${base}/instances/${second.body.instanceId}/counts`, { token: tenant.key })).body,
      (body) => body.entered === 60,
    );
    expect(secondCounts).toMatchObject({ total: 54, exited: 6, exitedFrom: { welcome: 6, wait: 0 }, steps: { wait: 54 } });
    const exitedAtEntry = await api('GET', `${base}/instances/${second.body.instanceId}/steps/welcome/export?users=exited`, { token: tenant.key });
    expect(ids(exitedAtEntry.body)).toEqual(cancelled);
    expect((await previewOf(atOnce.body.id, { user: 30 })).end).toEqual({ step: 'welcome', reason: 'exited' });
    expect((await previewOf(atOnce.body.id, { user: 31, events: [{ type: 'buy' }] })).end).toEqual({ step: 'bought', reason: 'exit' });

    // Without exit criteria there is nobody exited to export: a 422; an unknown `users` is a 400.
    const plain = await api('POST', `${base}/workflows`, { body: { name: 'plain', definition: journey() } });
    const third = await api('POST', `${base}/workflows/${plain.body.id}/start`, { body: { crowd: 'launch', reentry: 'allow' } });
    const plainCounts = await waitFor(
      'the plain instance to run',
      async () => (await api('GET', `${base}/instances/${third.body.instanceId}/counts`, { token: tenant.key })).body,
      (body) => body.total === 60,
    );
    expect(plainCounts.exited).toBeUndefined();
    const noExit = expectError(
      await api('GET', `${base}/instances/${third.body.instanceId}/steps/wait/export?users=exited`, { token: tenant.key }),
      422,
      'unprocessable',
    );
    expect(noExit.message).toContain('no exit criteria');
    expectError(await api('GET', `${base}/instances/${third.body.instanceId}/steps/wait/export?users=left`, { token: tenant.key }), 400, 'validation_failed');
  });
});
