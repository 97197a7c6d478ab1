// Exit criteria (issue 37 §6), engine only: a start of the plain start's journey whose exit criteria read the profile
// (`profile.plan == "team"`, about 30% of the users, from the profiles the routed start imported), timed until the
// instance runs with every user counted in a step or as exited and the exited count exact, against the same journey
// without criteria timed the same way beside it (this VM's speed varies between runs). Plain and exit starts
// alternate, twice each, each stopped again before the next; the fastest of each is compared. The criteria are one
// bitmap plan per partition over the start's users (server/engine/exit.ts), never a per-user evaluation.
import type { Engine } from '../../server/engine/engine';
import { WorkflowDefinition } from '../../core/model/workflow';
import { database as processDatabase } from '../../test/helpers/app-db';
import { createWorkflow } from '../../server/workflows/workflows';
import { BRANCH_JOURNEY } from '../lib/data';
import { againstPlainStarts } from './engine-holdout';
import { planOf } from './engine-routed';
import type { Measured } from './journey';

type Tenant = Parameters<typeof createWorkflow>[1];

/** `tenant` holds crowd `all` = users 0…users-1 and the routed start's profiles. */
export async function measureExitStart(engine: Engine, tenant: Tenant, users: number): Promise<Measured> {
  const leaving = await createWorkflow(processDatabase(), tenant, {
    name: 'exit-criteria',
    definition: WorkflowDefinition.parse({ ...BRANCH_JOURNEY, exit: { condition: 'profile.plan == "team"' } }),
  });
  let expected = 0;
  for (let user = 0; user < users; user++) if (planOf(user) === 'team') expected++;
  const { best, bestPlain, ms, plainMs } = await againstPlainStarts(engine, tenant, users, {
    plainName: 'plain-exit',
    workflowId: leaving.id,
    counted: (c) => c.total + (c.exited ?? 0) === users,
    check: (counts) => {
      if (counts.exited !== expected) throw new Error(`${counts.exited} users exited, expected ${expected}`);
    },
  });
  return {
    value: best / bestPlain,
    note: `(${Math.round(best)} ms; plain start ${Math.round(bestPlain)} ms; ${expected.toLocaleString('en-US')} exited)`,
    details: { exitMs: ms, plainMs, exited: expected },
  };
}
