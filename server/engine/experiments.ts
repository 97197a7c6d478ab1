// "Send the rest to the winner" (issue 37 §5): a split step run as an experiment is re-weighted so that its winning
// path takes 100% of new entrants. The change is a new workflow version (the running version with that split
// re-weighted and the winner recorded: core/model/experiment.ts withWinner) mapped onto the running instance as
// `POST …/instances/{iid}/workflow` maps versions (materializeUpdateWorkflow): users keep their steps, and who took
// which path before stays recorded, so users already past the split keep their paths. One durable procedure,
// `experiment.winner`, does both under the workflow's lock, asked by a person (the API, the studio) or by the engine
// when an experiment's automatic rule says so (checked with each counts sample, once a minute of the engine clock).
import { AppError, badRequest, conflict, notFound } from '../errors';
import { autoWinner, experimentResult, withWinner, type SplitStepOf } from '../../core/model/experiment';
import { validateWorkflow } from '../../core/model/validate';
import type { WINNER_DECIDED_BY } from '../../core/model/workflow';
import { saveWorkflowRow } from '../storage/workflow-rows';
import { loadDefinition } from './instance-store';
import { operation, requireRunning, type InstanceEngine } from './instances';
import type { WorkflowRuntime } from './runtime';
import type { Counts, SubmittedOperation } from './types';

export const WINNER_PROCEDURE = 'experiment.winner';

export type WinnerRequest = { step: string; path: string };
type DecidedBy = (typeof WINNER_DECIDED_BY)[number];

/**
 * Checks the request against the instance's running version (a clear 4xx), then submits `experiment.winner` under an
 * id of the instance, version and step: asked twice (a person and the engine's rule at once), it runs once.
 */
export async function submitWinner(
  engine: InstanceEngine,
  tenantId: string,
  instanceId: string,
  request: WinnerRequest,
  by: DecidedBy,
  now: number,
): Promise<SubmittedOperation> {
  const row = await requireRunning(engine.database, tenantId, instanceId);
  const definition = await loadDefinition(engine.database, tenantId, row.workflowId, row.version);
  const step = definition.steps.find((s) => s.name === request.step);
  if (!step) throw notFound(`Step "${request.step}" of instance ${instanceId} (version ${row.version} of its workflow)`);
  if (step.kind !== 'split' || !step.experiment) {
    throw new AppError(
      'unprocessable',
      `Step "${step.name}" of version ${row.version} is not an experiment (a split step with experiment): it has no winner to pick`,
      {
        path: 'step',
      },
    );
  }
  const decided = step.experiment.winner;
  if (decided)
    throw conflict(`Step "${step.name}" already sends everyone to "${decided.path}" (decided ${decided.by}, ${decided.at})`, { winner: decided.path });
  if (!step.paths.some((p) => p.next === request.path)) {
    throw badRequest(`path: "${request.path}" is not a path of step "${step.name}"; its paths lead to ${step.paths.map((p) => `"${p.next}"`).join(', ')}`, {
      path: 'path',
    });
  }
  const state = { tenantId, instanceId, workflowId: row.workflowId, fromVersion: row.version, ...request, at: new Date(now).toISOString(), by };
  const procedureId = await engine.runner.submit(WINNER_PROCEDURE, state, {
    id: `${WINNER_PROCEDURE}:${instanceId}:${row.version}:${request.step}`,
    tenantId,
    workflowId: row.workflowId,
  });
  return { procedureId, instanceId };
}

/** The experiments of a running version whose automatic rule picks a winner with these counts at `now`. */
export function dueWinners(workflow: WorkflowRuntime, counts: Counts, now: number): (WinnerRequest & { by: 'date' | 'significance' })[] {
  const due: (WinnerRequest & { by: 'date' | 'significance' })[] = [];
  for (const [name, step] of workflow.experiments) {
    const figures = counts.experiments?.[name];
    const decision = figures && autoWinner(step.experiment!, experimentResult(figures), now);
    if (decision) due.push({ step: name, ...decision });
  }
  return due;
}

type WinnerState = WinnerRequest & {
  tenantId: string;
  instanceId: string;
  workflowId: string;
  fromVersion: number;
  at: string;
  by: DecidedBy;
  version?: number;
};

/**
 * Registers `experiment.winner`, run by `engine`: first the new version (found again if a crash came between its
 * commit and the procedure's step), then the mapping of the instance onto it.
 */
export function registerWinnerProcedure(engine: InstanceEngine): void {
  engine.runner.types.register(
    operation(engine, WINNER_PROCEDURE, async (engine, raw) => {
      const state = raw as unknown as WinnerState;
      if (state.version === undefined) {
        state.version = await winnerVersion(engine, state);
        return { kind: 'executing' };
      }
      return { kind: 'done', output: await engine.materializeUpdateWorkflow(state.tenantId, state.instanceId, state.version, {}) };
    }),
    { replace: true },
  );
}

/** The version that sends the rest to the winner: written now, or the one an interrupted run of this procedure wrote. */
async function winnerVersion(engine: InstanceEngine, state: WinnerState): Promise<number> {
  const { db } = engine.database;
  const instance = await db.instance.findUniqueOrThrow({ where: { id: state.instanceId, tenantId: state.tenantId } });
  if (instance.state !== 'running') throw conflict(`Instance ${state.instanceId} is ${instance.state}, not running`);
  const winner = { path: state.path, at: state.at, by: state.by };
  const later = await db.workflowVersion.findMany({
    where: { tenantId: state.tenantId, workflowId: state.workflowId, version: { gt: state.fromVersion } },
    orderBy: { version: 'asc' },
  });
  for (const row of later) {
    const step = (JSON.parse(row.definition) as { steps: SplitStepOf[] }).steps.find((s) => s.name === state.step);
    if (JSON.stringify(step?.experiment?.winner) === JSON.stringify(winner)) return row.version;
  }
  if (instance.version !== state.fromVersion) {
    throw conflict(`Instance ${state.instanceId} moved from version ${state.fromVersion} to ${instance.version} meanwhile; pick the winner again`);
  }
  const checked = validateWorkflow(withWinner(await loadDefinition(engine.database, state.tenantId, state.workflowId, state.fromVersion), state.step, winner));
  if (!checked.ok) throw new AppError('invalid_workflow', `The winner's version is not valid: ${checked.problems[0].message}`, { problems: checked.problems });
  return saveWorkflowRow(engine.database, state.tenantId, state.workflowId, { updatedAt: new Date(Date.parse(state.at)) }, JSON.stringify(checked.definition));
}
