import { z } from 'zod';
import { operation } from '../openapi-kit';
import { CreateWorkflowBody, UpdateWorkflowBody, WorkflowDefinition, WorkflowDraft, WorkflowSchedule } from '../../core/model/workflow';

// Bodies are documented with the model's schemas (what a valid save looks like); the routes take the
// definition loosely and answer 400 invalid_workflow with details.problems = WorkflowProblem[].

const Running = z.object({ instanceId: z.string(), userCount: z.number() }).nullable();
const Summary = z.object({
  id: z.string(),
  name: z.string(),
  version: z.number().int(),
  schedule: WorkflowSchedule.nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
  running: Running,
});
const Workflow = Summary.extend({ definition: WorkflowDefinition, draft: WorkflowDraft });
const Problem = z.object({ step: z.string().nullable(), code: z.string(), message: z.string() });
const SavedWorkflow = Workflow.extend({
  warnings: z
    .array(Problem)
    .describe(
      'Saved, but will not work yet: `unknown_crowd` for a condition reading inCrowd("name") or a schedule naming a crowd the tenant does not have ' +
        '(step is null for the schedule); `unknown_webhook` for an enter action `webhook:<name>` naming a destination the tenant does not have',
    ),
});
const Version = z.object({ workflowId: z.string(), version: z.number().int(), definition: WorkflowDefinition, createdAt: z.string() });
const Versions = z.object({
  workflowId: z.string(),
  current: z.number().int(),
  versions: z.array(z.object({ version: z.number().int(), createdAt: z.string() })),
});

const tags = ['workflows'];
const params = ['tenant', 'id'];

export const paths: Record<string, object> = {
  '/tenants/{tenant}/workflows': {
    get: operation({
      summary: 'List workflows (by name) with their current version and running instance',
      tags,
      params: ['tenant'],
      ok: { status: 200, description: 'Workflows', schema: z.object({ workflows: z.array(Summary) }) },
      errors: [404],
    }),
    post: operation({
      summary: 'Create a workflow as version 1; 400 invalid_workflow lists every problem (details.problems: [{step, code, message}])',
      tags,
      params: ['tenant'],
      body: CreateWorkflowBody,
      ok: { status: 201, description: 'Created', schema: SavedWorkflow },
      errors: [404, 409],
    }),
  },
  '/tenants/{tenant}/workflows/{id}': {
    get: operation({
      summary: 'Get a workflow (by id or name) with its current definition, draft and schedule',
      tags,
      params,
      ok: { status: 200, description: 'Workflow', schema: SavedWorkflow },
      errors: [404],
    }),
    put: operation({
      summary: 'Save a workflow: a definition makes a new immutable version; name, draft and schedule alone do not',
      tags,
      params,
      body: UpdateWorkflowBody,
      ok: { status: 200, description: 'Saved', schema: SavedWorkflow },
      errors: [404, 409],
    }),
    delete: operation({
      summary: 'Delete a workflow and its versions (refused while an instance is starting, running or stopping)',
      tags,
      params,
      ok: { status: 204, description: 'Deleted' },
      errors: [404, 409],
    }),
  },
  '/tenants/{tenant}/workflows/{id}/versions': {
    get: operation({
      summary: 'List the versions of a workflow, newest first',
      tags,
      params,
      ok: { status: 200, description: 'Versions', schema: Versions },
      errors: [404],
    }),
  },
  '/tenants/{tenant}/workflows/{id}/versions/{version}': {
    get: operation({
      summary: 'Get one immutable version of a workflow',
      tags,
      params: [...params, 'version'],
      ok: { status: 200, description: 'Version', schema: Version },
      errors: [404],
    }),
  },
};
