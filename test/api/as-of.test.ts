import { describe, expect, it } from 'vitest';
import { openBuySkipJourney as definition } from '../fixtures/journeys';
import { api, createTenant } from '../helpers/api';

// Point-in-time counts and step exports over HTTP (issue 38 §2): the state the API showed at a moment, asked for
// again with ?asOf= after later events moved users on and a crowd update changed them; and every bad or unanswerable
// asOf a 4xx naming it.

const STEPS = definition.steps.map((s) => s.name);
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe('asOf on counts and step exports', () => {
  it('answers the counts and the users a step had at a past moment, and refuses what it cannot answer with a 4xx', async () => {
    const tenant = await createTenant(2);
    const base = `/tenants/${tenant.name}`;
    const as = { token: tenant.key };
    expect((await api('PUT', `${base}/crowds/c`, { body: range(1, 20).join('\n'), headers: { 'content-type': 'text/plain' } })).status).toBe(201);
    const created = await api('POST', `${base}/workflows`, { body: { name: 'As of', definition } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const iid: string = (await api('POST', `${base}/workflows/${created.body.id}/start`, { body: { crowd: 'c' } })).body.instanceId;
    await expect.poll(async () => (await api('GET', `${base}/instances/${iid}`)).body.state, { timeout: 20_000 }).toBe('running');
    const instance = `${base}/instances/${iid}`;
    const post = async (events: { user: number; type: string }[], bought: number) => {
      expect((await api('POST', '/events', { body: { events }, ...as })).status).toBe(202);
      await expect.poll(async () => (await api('GET', `${instance}/counts`, as)).body.steps.bought, { timeout: 20_000 }).toBe(bought);
    };
    const usersAt = async (step: string, query = '') => {
      const answer = await api('GET', `${instance}/steps/${step}/export?format=json${query}`, as);
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      return answer.body as number[];
    };

    await post([...range(1, 8).map((user) => ({ user, type: 'open' })), ...range(9, 10).map((user) => ({ user, type: 'buy' }))], 2);
    const then = new Date().toISOString();
    const countsThen = (await api('GET', `${instance}/counts`, as)).body;
    const usersThen = Object.fromEntries(await Promise.all(STEPS.map(async (step) => [step, await usersAt(step)])));
    // Moves are stamped with the engine's clock when applied: the next ones come in a later millisecond than `then`.
    await expect.poll(() => Date.now()).toBeGreaterThan(Date.parse(then));
    await post([...range(1, 4).map((user) => ({ user, type: 'buy' })), ...range(11, 15).map((user) => ({ user, type: 'open' }))], 6);
    expect((await api('GET', `${instance}/counts`, as)).body.steps).not.toEqual(countsThen.steps);
    // A crowd update (users 1-5 leave, 21-25 join) has no journal rows, and the moment before it is still answered.
    expect((await api('PUT', `${base}/crowds/c2`, { body: range(6, 25).join('\n'), headers: { 'content-type': 'text/plain' } })).status).toBe(201);
    expect((await api('POST', `${instance}/crowd`, { body: { crowd: 'c2' }, ...as })).status).toBeLessThan(300);
    await expect.poll(async () => (await api('GET', `${instance}/counts`, as)).body.entered, { timeout: 20_000 }).toBe(25);
    expect((await api('GET', `${instance}/counts`, as)).body.total).toBe(20);

    const counts = await api('GET', `${instance}/counts?asOf=${encodeURIComponent(then)}`, as);
    expect(counts.status, JSON.stringify(counts.body)).toBe(200);
    expect(counts.body).toEqual({ ...countsThen, asOf: then });
    for (const step of STEPS) expect(await usersAt(step, `&asOf=${encodeURIComponent(then)}`), step).toEqual(usersThen[step]);
    // RFC 3339 lets `t` and `z` be lower case, and any offset name the moment.
    const offset = new Date(Date.parse(then) + 2 * 3_600_000).toISOString().replace('Z', '+02:00').replace('T', 't');
    expect(await usersAt('opened', `&asOf=${encodeURIComponent(offset)}`)).toEqual(usersThen.opened);
    const csv = await fetchExport(`${instance}/steps/opened/export?asOf=${encodeURIComponent(then)}`, tenant.key);
    expect(csv.name).toBe(`as-of-opened-at-${then.slice(0, 19).replaceAll(':', '-')}Z.csv`);
    expect(csv.text.trim().split('\n').map(Number)).toEqual(usersThen.opened);

    // A value that is no RFC 3339 time: 400 naming asOf, on both routes.
    for (const bad of ['yesterday', '2026-02-30T00:00:00Z', '2026-12-01T09:30Z', '1764950400000', '']) {
      for (const path of [`${instance}/counts`, `${instance}/steps/wait/export`]) {
        const answer = await api('GET', `${path}?asOf=${encodeURIComponent(bad)}`, as);
        expect([answer.status, answer.body.error.code, answer.body.error.details.path], `${path} asOf=${bad}`).toEqual([400, 'validation_failed', 'asOf']);
        expect(answer.body.error.message).toMatch(/^asOf: /);
      }
    }
    // Before the start or in the future: 422 outside_retention naming the range that can be answered.
    const started = (await api('GET', instance, as)).body.startedAt as string;
    for (const moment of ['2000-01-01T00:00:00Z', new Date(Date.now() + 3_600_000).toISOString()]) {
      const answer = await api('GET', `${instance}/counts?asOf=${encodeURIComponent(moment)}`, as);
      expect([answer.status, answer.body.error.code, answer.body.error.details.path, answer.body.error.details.retainedFrom]).toEqual([
        422,
        'outside_retention',
        'asOf',
        started,
      ]);
      expect(answer.body.error.message).toContain(`from ${started} to now`);
    }
    const converted = await api('GET', `${instance}/steps/wait/export?users=converted&asOf=${encodeURIComponent(then)}`, as);
    expect([converted.status, converted.body.error.details.path]).toEqual([400, 'asOf']);
    const unknownStep = await api('GET', `${instance}/steps/nowhere/export?asOf=${encodeURIComponent(then)}`, as);
    expect(unknownStep.status).toBe(404);
    const unknownParameter = await api('GET', `${instance}/counts?asof=${encodeURIComponent(then)}`, as);
    expect([unknownParameter.status, unknownParameter.body.error.message]).toEqual([400, expect.stringContaining('asof')]);

    // A stopped instance has no journal-backed past here: 422 naming asOf.
    expect((await api('POST', `${instance}/stop`, as)).status).toBeLessThan(300);
    await expect.poll(async () => (await api('GET', instance, as)).body.state, { timeout: 20_000 }).toBe('stopped');
    const stopped = await api('GET', `${instance}/counts?asOf=${encodeURIComponent(then)}`, as);
    expect([stopped.status, stopped.body.error.code, stopped.body.error.details.path]).toEqual([422, 'unprocessable', 'asOf']);

    // The OpenAPI document names the parameter on both routes.
    const openapi = (await api('GET', '/openapi.json', { token: null })).body;
    for (const path of ['/tenants/{tenant}/instances/{iid}/counts', '/tenants/{tenant}/instances/{iid}/steps/{step}/export']) {
      expect(openapi.paths[path].get.parameters.map((p: { name: string }) => p.name)).toContain('asOf');
    }
  });
});

async function fetchExport(path: string, key: string): Promise<{ name: string; text: string }> {
  const answer = await api<string>('GET', path, { token: key });
  expect(answer.status).toBe(200);
  const disposition = answer.headers.get('content-disposition') ?? '';
  return { name: /filename="([^"]+)"/.exec(disposition)?.[1] ?? disposition, text: String(answer.body) };
}
