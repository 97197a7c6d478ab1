import { WELCOME_JOURNEY_NAME, welcomeJourney, welcomeJourneyDraft } from '../core/model/sample-workflows';
import { adminCall, DEMO_CROWD as CROWD, DEMO_TENANT as TENANT, DEMO_USERS as CROWD_SIZE, demoUser } from './demo-data';

// Seeds the demo over the real API of a running server: tenant `demo`, a 1,000,000-user crowd, a profile for each of
// its users through the streamed import (plan, country, age, time zone, signup time), and a sample workflow with
// branch, timer (a numeric range on profile.age), delay and split steps and a purchase goal, started over the crowd
// so the studio opens on a running journey (scripts/trickle.ts then moves its counts). Idempotent.
// Usage: tsx scripts/seed.ts http://localhost:3000   (CROWDFLOW_ADMIN_TOKEN from the environment)

const baseUrl = process.argv[2] ?? 'http://localhost:3000';
const call = adminCall(baseUrl);

function must(result: { status: number; body: any }, what: string) {
  if (result.status >= 300) throw new Error(`${what} failed (${result.status}): ${JSON.stringify(result.body)}`);
  return result.body;
}

/** 1M distinct ids spread over 0..4M, generated as text in chunks instead of one giant string. */
function crowdText(): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let next = 0;
  return new ReadableStream({
    pull(controller) {
      if (next >= CROWD_SIZE) return controller.close();
      const lines: string[] = [];
      for (let i = 0; i < 50_000 && next < CROWD_SIZE; i++, next++) lines.push(String(demoUser(next)));
      controller.enqueue(encoder.encode(lines.join('\n') + '\n'));
    },
  });
}

const COUNTRIES = ['NL', 'DE', 'US', 'FR', 'BE', 'GB'];
const TIME_ZONES: Record<string, string> = {
  NL: 'Europe/Amsterdam',
  DE: 'Europe/Berlin',
  US: 'America/New_York',
  FR: 'Europe/Paris',
  BE: 'Europe/Brussels',
  GB: 'Europe/London',
};

/** A profile for every crowd member (plan, country, age, time zone, signup time) as NDJSON, streamed to the import. */
function profileLines(): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let next = 0;
  return new ReadableStream({
    pull(controller) {
      if (next >= CROWD_SIZE) return controller.close();
      let text = '';
      for (let i = 0; i < 20_000 && next < CROWD_SIZE; i++, next++) {
        const user = demoUser(next);
        const country = COUNTRIES[next % COUNTRIES.length];
        const attributes = {
          plan: next % 5 === 0 ? 'pro' : 'free',
          country,
          age: 18 + ((next * 7919) % 60),
          tz: TIME_ZONES[country],
          signup: new Date(Date.UTC(2025, 0, 1) + (next % 365) * 86_400_000).toISOString(),
        };
        text += `${JSON.stringify({ user, attributes })}\n`;
      }
      controller.enqueue(encoder.encode(text));
    },
  });
}

const tenants = must(await call('GET', '/tenants'), 'listing tenants');
if (!tenants.tenants.some((t: { name: string }) => t.name === TENANT))
  must(await call('POST', '/tenants', JSON.stringify({ name: TENANT, partitions: 8 })), 'creating the demo tenant');

const crowd = await call('GET', `/tenants/${TENANT}/crowds/${CROWD}`);
if (crowd.status === 404) {
  const started = Date.now();
  const uploaded = must(await call('PUT', `/tenants/${TENANT}/crowds/${CROWD}`, crowdText(), 'text/plain'), 'uploading the demo crowd');
  console.log(`uploaded crowd ${CROWD}: ${uploaded.count} users in ${Date.now() - started} ms`);
  const engaged = Array.from({ length: Math.ceil(CROWD_SIZE / 20) }, (_, i) => i * 80);
  must(await call('PUT', `/tenants/${TENANT}/crowds/engaged`, JSON.stringify(engaged)), 'uploading the engaged crowd');
  const imported = must(await call('POST', `/tenants/${TENANT}/profiles/import`, profileLines(), 'application/x-ndjson'), 'importing demo profiles');
  console.log(`imported ${imported.lines} profiles in ${imported.ms} ms`);
}

type Workflow = { id: string; name: string; running: { instanceId: string } | null };
const workflows: Workflow[] = must(await call('GET', `/tenants/${TENANT}/workflows`), 'listing workflows').workflows;
let journey = workflows.find((w) => w.name === WELCOME_JOURNEY_NAME);
if (!journey) {
  // the goal gives the canvas, the side panel and the chart a conversion to show as the trickle's purchases arrive
  const definition = { ...welcomeJourney, goal: { condition: 'event.type == "purchase"' } };
  journey = must(
    await call('POST', `/tenants/${TENANT}/workflows`, JSON.stringify({ name: WELCOME_JOURNEY_NAME, definition, draft: welcomeJourneyDraft })),
    'creating the demo workflow',
  ) as Workflow;
}
if (!journey.running) {
  const started = Date.now();
  const { instanceId } = must(
    await call('POST', `/tenants/${TENANT}/workflows/${journey.id}/start`, JSON.stringify({ crowd: CROWD })),
    'starting the demo workflow',
  );
  for (let state = ''; state !== 'running' && Date.now() - started < 120_000; await new Promise((next) => setTimeout(next, 250))) {
    state = (await call('GET', `/tenants/${TENANT}/instances/${instanceId}`)).body?.state ?? '';
  }
  console.log(`started workflow "${WELCOME_JOURNEY_NAME}" over ${CROWD} in ${Date.now() - started} ms`);
}
console.log(`demo ready: tenant "${TENANT}", crowd "${CROWD}" (${CROWD_SIZE.toLocaleString('en')} users), workflow "${WELCOME_JOURNEY_NAME}" running`);
console.log(`the running journey: ${baseUrl}/t/${encodeURIComponent(TENANT)}/workflows/${journey.id}`);
