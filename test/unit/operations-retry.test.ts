import { afterAll, expect, it } from 'vitest';
import { deleteCrowd } from '../../server/crowd/store';
import { app } from '../../server/app';
import { Engine } from '../../server/engine/engine';
import { newId } from '../../server/ids';
import { createProcedureRunner } from '../../server/procedures/runner';
import type { ProcedureView } from '../../server/procedures/types';
import { db, database } from '../helpers/app-db';
import { holdPartitions, instanceState, releasePartitions, tenantWithWorkflow, until, uploadCrowd } from '../fixtures/operations/setup';
import { startServerProcess, type ServerProcess } from '../helpers/server-process';

// Every (operation × step it failed at × retry), with real server processes: server 1 is SIGKILLed with work in
// flight, server 2 (operations wait for partitions only 1.5 s) resumes what was accepted, fails what cannot run, and
// after each cause is fixed a retry completes. Nothing is left starting or stopping.
//
// | row | operation | fails at / interrupted at                              | then                         | expected              |
// | A   | start     | materialize: its crowd was deleted after it was checked | upload the crowd, retry      | running               |
// | B   | start     | partitions held by another member past the deadline    | free them, retry             | running               |
// | C   | stop      | partitions held by another member past the deadline    | free them, stop again        | stopped (running between) |
// | D   | start     | waiting for partitions, server killed                  | restart                      | running               |
// | E   | stop      | accepted, server killed before it ran                  | restart                      | stopped               |
// | F   | start     | instance row written, killed before its procedure      | restart (boot resumes it)    | running               |
// | G   | stop      | instance marked stopping, killed before its procedure  | restart (boot resumes it)    | stopped               |

const servers: ServerProcess[] = [];
afterAll(() => servers.forEach((server) => server.close()));
const runner = createProcedureRunner(database(), { owner: 'test-submitter', pollMs: 20 });
const submitter = new Engine({ database: database(), ingestState: app().state, runner }); // never started: submits and reads only

function server(env: Record<string, string> = {}): ServerProcess {
  const started = startServerProcess(env);
  servers.push(started);
  return started;
}

// Generous on purpose: each wait ends when the procedure finishes. A loaded CI machine (load 20+ on 2 cores) once took
// longer than 30 s and the wait returned a procedure still retrying; 3 minutes is a hang, not a slow machine.
const finished = async (id: string) => {
  const view = await runner.await(id, 180_000);
  expect(['done', 'failed'], `procedure ${id} did not finish within 3 minutes: ${JSON.stringify(view)}`).toContain(view.state);
  return view;
};
async function expectDone(id: string): Promise<ProcedureView> {
  const view = await finished(id);
  expect(view, JSON.stringify(view)).toMatchObject({ state: 'done', error: null });
  return view;
}
async function running(tenantId: string, workflowId: string): Promise<string> {
  const started = await submitter.startInstance(tenantId, workflowId, { crowd: 'crowd' });
  await expectDone(started.procedureId);
  return started.instanceId;
}

it('every failed or interrupted start and stop finishes: resumed after a SIGKILL, or completed by a retry once fixed', { timeout: 600_000 }, async () => {
  const [A, B, C, D, E, F, G] = await Promise.all(Array.from({ length: 7 }, tenantWithWorkflow));
  await holdPartitions(D.tenantId);

  const first = server();
  await first.ready;
  const cInstance = await running(C.tenantId, C.workflowId);
  const eInstance = await running(E.tenantId, E.workflowId);
  const gInstance = await running(G.tenantId, G.workflowId);
  const dStart = await submitter.startInstance(D.tenantId, D.workflowId, { crowd: 'crowd' });
  await until(
    async () => (await runner.get(dStart.procedureId))!,
    (view) => view.attempts >= 1,
    'D waiting for its partitions',
  );
  const fInstance = newId('in');
  await db().instance.create({
    data: { id: fInstance, tenantId: F.tenantId, workflowId: F.workflowId, version: 1, crowdName: 'crowd', state: 'starting', userCount: 0 },
  });
  await db().instance.update({ where: { id: gInstance }, data: { state: 'stopping' } });
  first.kill();

  // While no server runs: accepted operations wait in the database; partitions change hands.
  const aStart = await submitter.startInstance(A.tenantId, A.workflowId, { crowd: 'crowd' });
  await deleteCrowd(database(), A.tenantId, 'crowd');
  const eStop = await submitter.stopInstance(E.tenantId, eInstance);
  await holdPartitions(B.tenantId);
  await holdPartitions(C.tenantId);
  await releasePartitions(D.tenantId);

  const second = server({ PARTITION_WAIT_MS: '1500' });
  await second.ready;
  const bStart = await submitter.startInstance(B.tenantId, B.workflowId, { crowd: 'crowd' });
  const cStop = await submitter.stopInstance(C.tenantId, cInstance);

  // Resumed: D (killed while waiting), E (killed before it ran), F and G (resumed at boot).
  expect((await expectDone(dStart.procedureId)).output).toMatchObject({ userCount: 100 });
  expect((await expectDone(eStop.procedureId)).output).toMatchObject({ state: 'stopped', total: 100 });
  expect((await expectDone(`instance.start:${fInstance}`)).output).toMatchObject({ instanceId: fInstance, userCount: 100 });
  expect((await expectDone(`instance.stop:${gInstance}`)).output).toMatchObject({ state: 'stopped', total: 100 });
  expect(await Promise.all([dStart.instanceId, eInstance, fInstance, gInstance].map(instanceState))).toEqual(['running', 'stopped', 'running', 'stopped']);

  // Failed, with a reason a retry can fix; nothing half-done.
  expect((await finished(aStart.procedureId)).error).toBe('Crowd "crowd" was not found');
  for (const id of [bStart.procedureId, cStop.procedureId]) {
    const failed = await finished(id);
    expect(failed.state, JSON.stringify(failed)).toBe('failed');
    expect(failed.error).toMatch(
      /^waiting for partitions 0, 1, 2, 3 of tenant .*: not owned by this process yet \(gave up after waiting \d+ s; the limit is 2 s\)$/,
    );
    expect(failed.attempts).toBeGreaterThan(0);
  }
  expect(await Promise.all([aStart.instanceId, bStart.instanceId, cInstance].map(instanceState))).toEqual(['failed', 'failed', 'running']);

  // Causes fixed, then retried: a retry of the start, and for C simply the stop again.
  await uploadCrowd(A.tenantId);
  await releasePartitions(B.tenantId);
  await releasePartitions(C.tenantId);
  await runner.retry(aStart.procedureId);
  await runner.retry(bStart.procedureId);
  expect((await submitter.stopInstance(C.tenantId, cInstance)).procedureId).toBe(cStop.procedureId);
  expect((await expectDone(aStart.procedureId)).output).toMatchObject({ instanceId: aStart.instanceId, userCount: 100 });
  expect((await expectDone(bStart.procedureId)).output).toMatchObject({ instanceId: bStart.instanceId, userCount: 100 });
  expect((await expectDone(cStop.procedureId)).output).toMatchObject({ state: 'stopped', total: 100 });
  expect(await Promise.all([aStart.instanceId, bStart.instanceId, cInstance].map(instanceState))).toEqual(['running', 'running', 'stopped']);
  expect(await db().instance.count({ where: { state: { in: ['starting', 'stopping'] } } })).toBe(0);
});
