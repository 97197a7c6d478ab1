// Experiments over HTTP (issue 37 §5): the per-path results the counts carry, and "send the rest to the winner". The
// statistics are core/model/experiment.ts's; the operation is server/engine/experiments.ts's.
import { z } from 'zod';
import { MIN_PATH_USERS, WIN_PROBABILITY } from '../../core/model/experiment';
import { MIN_OUTCOMES } from '../../core/model/lift';
import { StepName } from '../../core/model/workflow';
import { operation } from '../openapi-kit';

export const WinnerBody = z.strictObject({
  path: StepName.describe("The winning path, named by the step it leads to (as in the counts' `experiments.<step>.paths[].path`)"),
});

const PathResult = z.object({
  path: z.string().describe('The path, named by the step it leads to'),
  entered: z.number().describe('Users who took the path (each once)'),
  converted: z.number().describe('Of them, users who reached the goal'),
  rate: z.number().nullable().describe('converted / entered; null while nobody took the path'),
  interval: z.object({ low: z.number(), high: z.number() }).nullable().describe('95% Wilson score interval of the rate; null while nobody took the path'),
  probabilityBest: z
    .number()
    .describe(
      "Posterior probability that this path's rate is the highest, each rate ~ Beta(1 + converted, 1 + entered − converted), " +
        'integrated numerically (deterministic); the paths add up to 1',
    ),
});

export const ExperimentResultSchema = z.object({
  paths: z.array(PathResult).describe("In the split's order"),
  leader: z.string().nullable().describe('The path most likely best'),
  enoughData: z.boolean().describe(`Every path has at least ${MIN_PATH_USERS} users, ${MIN_OUTCOMES} who converted and ${MIN_OUTCOMES} who did not`),
  significant: z.boolean().describe(`enoughData and the leader is best with probability ≥ ${WIN_PROBABILITY}`),
  winner: z.string().nullable().describe('The path every new entrant takes, once the rest were sent to it; else null'),
});

const Submitted = z.object({ procedureId: z.string(), instanceId: z.string() });

export const paths: Record<string, object> = {
  '/tenants/{tenant}/instances/{iid}/experiments/{step}/winner': {
    post: operation({
      summary: "Send the rest of an experiment's users to one path",
      description:
        "The split step `step` of the instance's running version (one with `experiment`) is re-weighted: the path leading to `path` takes 100% " +
        'of new entrants, the others 0%. This is a new workflow version (the running one, so re-weighted, with `experiment.winner` ' +
        'recorded), mapped onto the running instance as POST …/workflow maps versions; users already past the split keep their paths. ' +
        'Runs as the procedure `experiment.winner` (its output has the new version). 404: no such step; 422: the step is not an ' +
        'experiment; 409: the instance is not running, or the experiment already has a winner.',
      tags: ['instances'],
      params: ['tenant', 'iid', 'step'],
      body: WinnerBody,
      ok: { status: 202, description: 'Submitted', schema: Submitted },
      errors: [404, 409, 422],
    }),
  },
};
