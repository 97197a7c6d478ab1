import { afterEach, expect, it } from 'vitest';
import { WorkflowDefinition } from '../../core/model/workflow';
import { RoaringBitmap32 } from '../../server/crowd/bitmap';
import { TenantData } from '../../server/engine/context';
import { entryRouting } from '../../server/engine/entry-routing';
import { WorkflowRuntime } from '../../server/engine/runtime';
import { FairTurns, Slices } from '../../server/engine/slices';
import { newId } from '../../server/ids';
import { importProfiles } from '../../server/profiles/import';
import { database, db } from '../helpers/app-db';

// A branch step that routes on entry through a condition without a bitmap plan evaluates it per user. The Mover that
// routes is synchronous, so a bulk move's users are evaluated first, between slice boundaries, and the route reads
// those results: a start of millions of users through such a condition no longer holds the engine thread in one go.

/** Slices whose every check finds the slice used up: each user evaluated is followed by a turn of the others. */
class SliceEveryCheck extends Slices {
  override get due(): boolean {
    return true;
  }
}

let data: TenantData | undefined;
afterEach(() => data?.close());

it("evaluates a per-user entry condition between other tenants' turns before the move, and routes from those results", async () => {
  const tenantId = newId('tn');
  await db().tenant.create({ data: { id: tenantId, name: tenantId.toLowerCase().replace(/[^a-z0-9]/g, ''), partitions: 1 } });
  const users = Array.from({ length: 40 }, (_, i) => i);
  const country = (user: number) => ['FR', 'DE', 'FI', 'US'][user % 4];
  const lines = users.map((user) => JSON.stringify({ user, attributes: { country: country(user) } })).join('\n');
  await importProfiles(database(), tenantId, new Blob([lines]).stream(), 'ndjson');
  const definition = WorkflowDefinition.parse({
    steps: [
      { name: 'entry', kind: 'branch', branches: [{ condition: 'profile.country.startsWith("F")', next: 'french' }] },
      { name: 'french', kind: 'direct' },
    ],
  });
  const workflow = new WorkflowRuntime(definition, 'wf');
  const condition = workflow.get('entry').conditions[0];
  expect(condition.plan).toBeFalsy(); // else this test would not be about per-user evaluation

  data = new TenantData(database(), tenantId);
  const routing = await entryRouting(data, workflow);
  const fair = new FairTurns();
  const order: string[] = [];
  const everyone = RoaringBitmap32.from(users);
  const now = Date.UTC(2026, 0, 1);
  const prepared = routing.prepare(everyone, 'entry', now, new SliceEveryCheck(fair, 'a')).then(() => order.push('a prepared'));
  const other = (async () => {
    for (let turn = 0; turn < 3; turn++) {
      await fair.next('b');
      order.push('b');
    }
  })();
  await Promise.all([prepared, other]);
  expect(order).toEqual(['b', 'b', 'b', 'a prepared']);

  // The route reads those results rather than evaluating the users again: a profile changed since (user 0 moves to
  // the US) does not change where user 0 goes at this moment, while a user nobody prepared (44, one entering on its
  // own event) is evaluated on the spot, and at another moment nothing prepared holds.
  await importProfiles(
    database(),
    tenantId,
    new Blob([`{"user":0,"attributes":{"country":"US"}}\n{"user":44,"attributes":{"country":"FR"}}`]).stream(),
    'ndjson',
  );
  const french = (moment: number, who: RoaringBitmap32) => routing.route(workflow.get('entry'), who, moment).taken[0].toArray();
  expect(french(now, everyone)).toEqual(users.filter((user) => country(user).startsWith('F')));
  expect(french(now, RoaringBitmap32.from([0, 1, 44]))).toEqual([0, 44]);
  expect(french(now + 1, everyone)).toEqual(users.filter((user) => user !== 0 && country(user).startsWith('F')));
});
