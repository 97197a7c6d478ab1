// Audience paths (issue 37 §1), engine only: a start over the whole dense crowd whose entry step is a 3-way profile
// branch, timed until the instance runs with each path's count exact, against the plain start measured just before
// in the same run (this VM's speed varies between runs). Users 0…N-1 get a plan from a hash of their id; 1 in 10 has
// no profile (the `true` branch takes them with the free plan's users).
import type { Engine } from '../../server/engine/engine';
import { WorkflowDefinition } from '../../core/model/workflow';
import { importProfiles } from '../../server/profiles/import';
import { saveProfileSnapshot } from '../../server/profiles/index-store';
import { database as processDatabase } from '../../server/storage/database';
import { createWorkflow } from '../../server/workflows/workflows';
import type { Measured } from './journey';

const ROUTED_JOURNEY = {
  steps: [
    {
      name: 'plan',
      kind: 'branch',
      branches: [
        { condition: 'profile.plan == "pro"', next: 'pro' },
        { condition: 'profile.plan == "team"', next: 'team' },
        { condition: 'true', next: 'other' },
      ],
    },
    { name: 'pro', kind: 'direct' },
    { name: 'team', kind: 'direct' },
    { name: 'other', kind: 'direct' },
  ],
};

const PLANS = ['pro', 'team', 'free'] as const;

/** User i's plan (null: no profile, 1 in 10), deterministic and spread over the whole id range. */
export function planOf(user: number): (typeof PLANS)[number] | null {
  if (user % 10 === 0) return null;
  return PLANS[(Math.imul(user ^ 0x9e3779b9, 0x85ebca6b) >>> 8) % PLANS.length];
}

function planProfiles(n: number): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let user = 0;
  return new ReadableStream({
    pull(controller) {
      if (user >= n) return controller.close();
      let text = '';
      for (const end = Math.min(n, user + 5_000); user < end; user++) {
        const plan = planOf(user);
        if (plan) text += `{"user":${user},"attributes":{"plan":"${plan}"}}\n`;
      }
      controller.enqueue(encoder.encode(text));
    },
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `tenant` already holds crowd `all` = users 0…users-1; `plainStartMs` is the plain start of the same run. */
export async function measureRoutedStart(engine: Engine, tenant: Parameters<typeof createWorkflow>[1], users: number, plainStartMs: number): Promise<Measured> {
  console.log(`  importing ${users.toLocaleString('en-US')} profiles with a plan…`);
  await importProfiles(processDatabase(), tenant.id, planProfiles(users), 'ndjson');
  await saveProfileSnapshot(tenant.id); // now, not during the start
  const expected: Record<string, number> = { plan: 0, pro: 0, team: 0, other: 0 };
  for (let user = 0; user < users; user++) {
    const plan = planOf(user);
    expected[plan === 'pro' || plan === 'team' ? plan : 'other']++;
  }
  const workflow = await createWorkflow(processDatabase(), tenant, { name: 'routed', definition: WorkflowDefinition.parse(ROUTED_JOURNEY) });
  await sleep(500);
  const started = performance.now();
  const { instanceId } = await engine.startInstance(tenant.id, workflow.id, { crowd: 'all' });
  for (;;) {
    const { state } = await engine.getInstance(tenant.id, instanceId);
    if (state === 'failed' || state === 'stopped') throw new Error(`instance ${instanceId} is ${state}`);
    if (state === 'running') {
      const { steps } = await engine.getCounts(tenant.id, instanceId);
      if (Object.entries(expected).every(([step, count]) => steps[step] === count)) break;
      if (performance.now() - started > 120_000) throw new Error(`paths not as expected: ${JSON.stringify({ steps, expected })}`);
    }
    await sleep(5);
  }
  const ms = performance.now() - started;
  return {
    value: ms / plainStartMs,
    note: `(${Math.round(ms)} ms; plain start ${Math.round(plainStartMs)} ms)`,
    details: { ms: Math.round(ms), plainStartMs: Math.round(plainStartMs), paths: expected },
  };
}
