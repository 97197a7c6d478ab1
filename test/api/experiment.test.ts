// Experiments that pick a winner over real HTTP (issue 37 §5): a 50/50 split run as an experiment over a purchase
// goal. The counts (GET and the SSE stream) report each path's users, conversion, Wilson interval and probability of
// being best, checked here against the users each path's step holds and the Wilson formula; "send the rest to the
// winner" creates version 2 whose split sends 100% to the winner, new entrants all take it, and users who took the
// other path keep it. Bad requests are 4xx naming the problem.
import { describe, expect, it } from 'vitest';
import { api, baseUrl, createTenant, expectError } from '../helpers/api';
import { waitFor } from '../helpers/wait-for';
import { countsMessageWhere } from '../helpers/counts-stream';

const journey = (withGoal = true) => ({
  steps: [
    {
      name: 'ab',
      kind: 'split',
      paths: [
        { percent: 50, next: 'a' },
        { percent: 50, next: 'b' },
      ],
      experiment: {},
    },
    { name: 'a', kind: 'branch', branches: [{ condition: 'event.type == "buy"', next: 'done' }] },
    { name: 'b', kind: 'branch', branches: [{ condition: 'event.type == "buy"', next: 'done' }] },
    { name: 'done', kind: 'direct' },
  ],
  ...(withGoal ? { goal: { condition: 'event.type == "buy"' } } : {}),
});
const ids = (text: unknown) => String(text).split('\n').filter(Boolean).map(Number);

function wilson(x: number, n: number) {
  const [p, z] = [x / n, 1.959964];
  const centre = (p + (z * z) / (2 * n)) / (1 + (z * z) / n);
  const half = (z / (1 + (z * z) / n)) * Math.sqrt((p * (1 - p)) / n + (z * z) / (4 * n * n));
  return { low: centre - half, high: centre + half };
}

/** The first `counts` message of the instance's SSE stream. */
async function streamedCounts(path: string, token: string) {
  const response = await fetch(`${baseUrl()}/api/v1${path}/counts/stream`, { headers: { authorization: `Bearer ${token}` } });
  const counts = await countsMessageWhere(response, () => true);
  if (!counts) throw new Error(`no counts message on ${path}/counts/stream within 10 s`);
  return counts;
}

describe('experiments', () => {
  it('report each path, and send the rest to the winner in a new version mapped onto the running instance', async () => {
    const tenant = await createTenant(2);
    const base = `/tenants/${tenant.name}`;
    const put = (name: string, users: number[]) => api('PUT', `${base}/crowds/${name}`, { body: users.join('\n'), headers: { 'content-type': 'text/plain' } });
    expect(
      (
        await put(
          'launch',
          Array.from({ length: 400 }, (_, i) => i + 1),
        )
      ).status,
    ).toBeLessThan(300);

    // validateWorkflow(): an experiment needs the journey's goal.
    const noGoal = expectError(await api('POST', `${base}/workflows`, { body: { name: 'blind', definition: journey(false) } }), 400, 'invalid_workflow');
    expect(noGoal.message).toContain('Step "ab" is an experiment, which compares its paths on the journey\'s goal, and this workflow has no goal');

    const workflow = await api('POST', `${base}/workflows`, { body: { name: 'pricing', definition: journey() } });
    expect(workflow.status, JSON.stringify(workflow.body)).toBe(201);
    const started = await api('POST', `${base}/workflows/${workflow.body.id}/start`, { body: { crowd: 'launch' } });
    const instance = `${base}/instances/${started.body.instanceId}`;
    const counts = (until: (body: any) => boolean) =>
      waitFor('the counts', async () => (await api('GET', `${instance}/counts`, { token: tenant.key })).body, until);
    await counts((body) => body.total === 400);
    const stepIds = async (step: string) => ids((await api('GET', `${instance}/steps/${step}/export`, { token: tenant.key })).body);
    const [a, b] = [await stepIds('a'), await stepIds('b')];

    // 10 of a's users buy, 30 of b's.
    const events = [...a.slice(0, 10), ...b.slice(0, 30)].map((user) => ({ user, type: 'buy' }));
    expect((await api('POST', '/events', { token: tenant.key, body: { events } })).status).toBe(202);
    const measured = (await counts((body) => body.converted === 40)).experiments.ab;
    expect(measured.paths.map((p: { path: string; entered: number; converted: number }) => [p.path, p.entered, p.converted])).toEqual([
      ['a', a.length, 10],
      ['b', b.length, 30],
    ]);
    for (const [i, [x, n]] of [
      [10, a.length],
      [30, b.length],
    ].entries()) {
      expect(measured.paths[i].rate).toBe(x / n);
      expect(measured.paths[i].interval.low).toBeCloseTo(wilson(x, n).low, 6);
      expect(measured.paths[i].interval.high).toBeCloseTo(wilson(x, n).high, 6);
    }
    expect(measured.paths[0].probabilityBest + measured.paths[1].probabilityBest).toBeCloseTo(1, 9);
    expect(measured.paths[1].probabilityBest).toBeGreaterThan(0.99);
    expect(measured).toMatchObject({ leader: 'b', enoughData: true, significant: true, winner: null });
    expect((await streamedCounts(instance, tenant.key)).experiments?.ab).toEqual(measured);

    // Bad requests: an unknown path (400), an unknown step (404), a step that is no experiment (422).
    const winner = (step: string, path: unknown) => api('POST', `${instance}/experiments/${step}/winner`, { body: { path } });
    expect(expectError(await winner('ab', 'c'), 400, 'bad_request').message).toBe('path: "c" is not a path of step "ab"; its paths lead to "a", "b"');
    expect(expectError(await winner('ab', 7), 400, 'validation_failed').message).toMatch(/^path/);
    expectError(await winner('nowhere', 'a'), 404, 'not_found');
    expect(expectError(await winner('a', 'done'), 422, 'unprocessable').message).toContain('is not an experiment');

    // Send the rest to b: the procedure makes version 2 and maps the instance onto it.
    const sent = await winner('ab', 'b');
    expect(sent.status, JSON.stringify(sent.body)).toBe(202);
    const procedure = await waitFor(
      'the winner procedure',
      async () => (await api('GET', `/procedures/${sent.body.procedureId}`)).body,
      (body) => body.state === 'done' || body.state === 'failed',
    );
    expect(procedure).toMatchObject({ type: 'experiment.winner', state: 'done', output: { version: 2 } });
    expect((await api('GET', instance)).body.version).toBe(2);
    const saved = (await api('GET', `${base}/workflows/${workflow.body.id}`)).body;
    expect(saved.version).toBe(2);
    expect(saved.definition.steps[0]).toMatchObject({
      paths: [
        { percent: 0, next: 'a' },
        { percent: 100, next: 'b' },
      ],
      experiment: { winner: { path: 'b', by: 'manual' } },
    });
    expect(expectError(await winner('ab', 'a'), 409, 'conflict').message).toContain('already sends everyone to "b"');

    // 200 new users enter: all take b; a's users keep their path.
    expect(
      (
        await put(
          'more',
          Array.from({ length: 600 }, (_, i) => i + 1),
        )
      ).status,
    ).toBeLessThan(300);
    expect((await api('POST', `${instance}/crowd`, { body: { crowd: 'more' } })).status).toBe(202);
    const after = (await counts((body) => body.total === 600)).experiments.ab;
    expect(after.paths.map((p: { entered: number }) => p.entered)).toEqual([a.length, b.length + 200]);
    expect(after.winner).toBe('b');
    expect(await stepIds('a')).toEqual(a.slice(10));
    expect((await stepIds('b')).sort((x, y) => x - y)).toEqual([...b.slice(30), ...Array.from({ length: 200 }, (_, i) => 401 + i)].sort((x, y) => x - y));

    // Stopped: the snapshot's counts keep the experiment's figures, read the same way.
    expect((await api('POST', `${instance}/stop`)).status).toBe(202);
    await waitFor(
      'the stop',
      async () => (await api('GET', instance)).body.state,
      (state) => state === 'stopped',
    );
    expect((await api('GET', `${instance}/counts`, { token: tenant.key })).body.experiments.ab).toEqual(after);
    expectError(await winner('ab', 'a'), 409, 'conflict');
  });
});
