import { adminCall, DEMO_TENANT, DEMO_USERS, demoUser } from './demo-data';

// A small, steady stream of events into the demo journey, so a newcomer sees its counts move: every
// CROWDFLOW_TRICKLE_MS (default 1000) a batch of CROWDFLOW_TRICKLE_EVENTS (default 20) events of random crowd users,
// about two in three "open" (to nurture, or pro_nurture for pro users) and one in three "purchase" (to customer: the
// goal). Runs until stopped. Usage: tsx scripts/trickle.ts http://localhost:3000   (CROWDFLOW_ADMIN_TOKEN set)

const baseUrl = process.argv[2] ?? 'http://localhost:3000';
const intervalMs = Number(process.env.CROWDFLOW_TRICKLE_MS ?? 1000);
const batchSize = Number(process.env.CROWDFLOW_TRICKLE_EVENTS ?? 20);
const call = adminCall(baseUrl);

function batch() {
  return Array.from({ length: batchSize }, () => ({
    user: demoUser(Math.floor(Math.random() * DEMO_USERS)),
    type: Math.random() < 2 / 3 ? 'open' : 'purchase',
  }));
}

let sent = 0;
const timer = setInterval(async () => {
  const answer = await call('POST', '/events', JSON.stringify({ tenant: DEMO_TENANT, events: batch() })).catch((error: Error) => ({
    status: 0,
    body: error.message,
  }));
  if (answer.status === 202) sent += batchSize;
  else console.error(`trickle: events refused (${answer.status}): ${JSON.stringify(answer.body)}`);
}, intervalMs);

function stop() {
  clearInterval(timer);
  console.log(`trickle: sent ${sent} events`);
  process.exit(0);
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
console.log(`trickle: ${batchSize} events every ${intervalMs} ms into tenant "${DEMO_TENANT}"`);
