// Audience paths (issue 37 §1), engine only: a start over the whole dense crowd whose entry step is a 3-way profile
// branch, timed until the instance runs with each path's count exact, against a start of the plain journey timed the
// same way beside it, in the same state (as the holdout and exit lines: the run's first start pays for warming up,
// is timed only until `running`, and ran before the events and imports that the engine may still be checkpointing).
// Plain and routed starts alternate, twice each, each stopped again before the next; the fastest of each is
// compared. Users 0…N-1 get a plan from a hash of their id; 1 in 10 has no profile (the `true` branch takes them
// with the free plan's users).
import type { Engine } from '../../server/engine/engine';
import type { Counts } from '../../server/engine/types';
import { WorkflowDefinition } from '../../core/model/workflow';
import { importProfiles } from '../../server/profiles/import';
import { saveProfileSnapshot } from '../../server/profiles/index-store';
import { database as processDatabase } from '../../test/helpers/app-db';
import { createWorkflow } from '../../server/workflows/workflows';
import { againstPlainStarts } from './engine-holdout';
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

type Tenant = Parameters<typeof createWorkflow>[1];

/** Gives users 0…users-1 of `tenant` their plans (planOf), outside the routed start's profiled window. */
export async function importPlans(tenant: Tenant, users: number): Promise<void> {
  console.log(`  importing ${users.toLocaleString('en-US')} profiles with a plan…`);
  await importProfiles(processDatabase(), tenant.id, planProfiles(users), 'ndjson');
  await saveProfileSnapshot(processDatabase(), tenant.id); // now, not during the start
}

/** `tenant` already holds crowd `all` = users 0…users-1 and their plans (importPlans). */
export async function measureRoutedStart(engine: Engine, tenant: Tenant, users: number): Promise<Measured> {
  const expected: Record<string, number> = { pro: 0, team: 0, other: 0 };
  for (let user = 0; user < users; user++) {
    const plan = planOf(user);
    expected[plan === 'pro' || plan === 'team' ? plan : 'other']++;
  }
  const routed = await createWorkflow(processDatabase(), tenant, { name: 'routed', definition: WorkflowDefinition.parse(ROUTED_JOURNEY) });
  const { best, bestPlain, ms, plainMs } = await againstPlainStarts(engine, tenant, users, {
    plainName: 'plain-routed',
    workflowId: routed.id,
    counted: (counts: Counts) => Object.entries(expected).every(([step, count]) => counts.steps[step] === count) && !counts.steps.plan,
  });
  return {
    value: best / bestPlain,
    note: `(${Math.round(best)} ms; plain start ${Math.round(bestPlain)} ms)`,
    details: { routedMs: ms, plainMs, paths: expected },
  };
}
