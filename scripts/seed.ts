import { WELCOME_JOURNEY_NAME, welcomeJourney, welcomeJourneyDraft } from '../server/model/sample-workflows';

// Seeds the demo over the real API of a running server: tenant `demo`, a 1,000,000-user crowd, a profile for each of
// its users through the streamed import (plan, country, age, time zone, signup time), and a sample workflow with
// branch, timer (a numeric range on profile.age), delay and split steps. Idempotent.
// Usage: tsx scripts/seed.ts http://localhost:3000   (CROWDFLOW_ADMIN_TOKEN from the environment)

const baseUrl = process.argv[2] ?? 'http://localhost:3000';
const token = process.env.CROWDFLOW_ADMIN_TOKEN;
if (!token) throw new Error('CROWDFLOW_ADMIN_TOKEN is not set');

const TENANT = 'demo';
const CROWD = 'newsletter-subscribers';
const CROWD_SIZE = 1_000_000;

async function call(method: string, path: string, body?: BodyInit, contentType = 'application/json') {
  const response = await fetch(`${baseUrl}/api/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': contentType } : {}) },
    body,
    ...(body instanceof ReadableStream ? { duplex: 'half' } : {}),
  } as RequestInit);
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : null };
}

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
      for (let i = 0; i < 50_000 && next < CROWD_SIZE; i++, next++) lines.push(String(next * 4 + (next % 3)));
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
        const user = next * 4 + (next % 3);
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
  const engaged = Array.from({ length: 50_000 }, (_, i) => i * 80);
  must(await call('PUT', `/tenants/${TENANT}/crowds/engaged`, JSON.stringify(engaged)), 'uploading the engaged crowd');
  const imported = must(await call('POST', `/tenants/${TENANT}/profiles/import`, profileLines(), 'application/x-ndjson'), 'importing demo profiles');
  console.log(`imported ${imported.lines} profiles in ${imported.ms} ms`);
}

const workflows = must(await call('GET', `/tenants/${TENANT}/workflows`), 'listing workflows');
if (!workflows.workflows.some((w: { name: string }) => w.name === WELCOME_JOURNEY_NAME)) {
  must(
    await call('POST', `/tenants/${TENANT}/workflows`, JSON.stringify({ name: WELCOME_JOURNEY_NAME, definition: welcomeJourney, draft: welcomeJourneyDraft })),
    'creating the demo workflow',
  );
}
console.log(`demo ready: tenant "${TENANT}", crowd "${CROWD}" (${CROWD_SIZE.toLocaleString('en')} users), workflow "${WELCOME_JOURNEY_NAME}"`);
