import { describe, expect, it } from 'vitest';
import { api, createTenant, expectError } from '../helpers/api';
import { waitFor } from '../helpers/wait-for';

// A local-time timer through the real server: saved, validated, documented, and run by the engine thread over the
// profile index (the zones' firing times themselves are the engine test's: the server runs on the real clock).

const localTimer = (fields: Record<string, unknown>) => ({
  steps: [
    { name: 'wake', kind: 'timer', cron: '*/2 * * * * *', tzFromProfile: 'timezone', next: 'end', ...fields },
    { name: 'end', kind: 'direct' },
  ],
});

/** The object schema somewhere in `node` whose `kind` property is the constant `kind`. */
function stepSchema(node: unknown, kind: string): { properties: Record<string, { description?: string }> } | undefined {
  if (typeof node !== 'object' || node === null) return undefined;
  const properties = (node as { properties?: Record<string, { const?: unknown }> }).properties;
  if (properties?.kind?.const === kind) return node as { properties: Record<string, { description?: string }> };
  for (const child of Object.values(node)) {
    const found = stepSchema(child, kind);
    if (found) return found;
  }
  return undefined;
}

describe('local-time timers over HTTP', () => {
  it('refuses an unknown default zone and a bad attribute path, keeps a good one, and moves users of every zone', async () => {
    const tenant = await createTenant(2);
    const base = `/tenants/${tenant.name}`;
    expect((await api('PUT', `${base}/limits`, { body: { minTimerPeriodSeconds: 1 } })).status).toBe(200);

    const problemsOf = async (definition: unknown) => {
      const refused = expectError(await api('POST', `${base}/workflows`, { body: { name: 'bad', definition } }), 400, 'invalid_workflow');
      return (refused.details as { problems: { step: string | null; code: string; message: string }[] }).problems;
    };
    expect(await problemsOf(localTimer({ tz: 'Mars/Olympus' }))).toEqual([
      {
        step: 'wake',
        code: 'bad_time_zone',
        message: 'Step "wake" tz "Mars/Olympus" is not an IANA time zone; write e.g. "Europe/Amsterdam", "America/New_York" or "UTC"',
      },
    ]);
    expect((await problemsOf(localTimer({ tzFromProfile: 'profile.timezone' }))).map((p) => [p.step, p.code])).toEqual([['wake', 'invalid_field']]);

    const definition = localTimer({ tz: 'Asia/Tokyo' });
    const created = await api('POST', `${base}/workflows`, { body: { name: 'mornings', definition } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect((await api('GET', `${base}/workflows/${created.body.id}`)).body.definition).toEqual(definition);

    const profiles = [
      { user: 1, attributes: { timezone: 'Europe/Amsterdam' } },
      { user: 2, attributes: { timezone: 'America/New_York' } },
      { user: 3, attributes: { plan: 'free' } },
      { user: 4, attributes: { timezone: 'Nowhere/Zone' } },
    ];
    const imported = await api('POST', `${base}/profiles/import`, {
      token: tenant.key,
      body: profiles.map((p) => JSON.stringify(p)).join('\n'),
      headers: { 'content-type': 'application/x-ndjson' },
    });
    expect(imported.status, JSON.stringify(imported.body)).toBe(200);
    expect((await api('PUT', `${base}/crowds/c`, { body: '1\n2\n3\n4', headers: { 'content-type': 'text/plain' } })).status).toBeLessThan(300);
    const started = await api('POST', `${base}/workflows/${created.body.id}/start`, { token: tenant.key, body: { crowd: 'c' } });
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    const instanceId: string = started.body.instanceId;
    const read = () => api('GET', `${base}/instances/${instanceId}/counts`);
    const counts = await waitFor('four users at the end', read, (answer) => answer.status === 200 && answer.body.steps?.end === 4);
    // Every 2 s falls on the same instant in every zone: all four users moved, whichever zone they are in or lack.
    expect(counts.body.steps).toEqual({ wake: 0, end: 4 });
  });

  it('documents tzFromProfile on the timer step in the OpenAPI document', async () => {
    const doc = (await api('GET', '/openapi.json', { token: null })).body;
    const timer = stepSchema(doc, 'timer');
    expect(timer?.properties.tzFromProfile?.description).toMatch(/^Local-time timer: the profile attribute holding each user's IANA time zone/);
    expect(timer?.properties.tz?.description).toMatch(/With `tzFromProfile`: the zone of users who have no valid zone of their own$/);
  });
});
