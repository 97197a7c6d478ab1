// Event-triggered entry (workflow `entry: {event, condition?, crowd?, reentry}`): for one batch of events in one
// shard, the users who may enter are found with bitmaps (the batch's users with a trigger event, AND the trigger's
// crowd, ANDNOT every step they could already be in, ANDNOT those who left by the exit criteria), the condition runs
// only for those, and they enter the entry step as bulk moves: one from nowhere, and with re-entry `again` one per exit
// step they rested in.
import type { ConditionEvent } from '../conditions/compile';
import { profileKeysOfAll } from '../conditions/profile-predicate';
import { RoaringBitmap32 } from '../crowd/bitmap';
import type { TenantData } from './context';
import type { DeadLetterBatch } from './dead-letter';
import type { Mover } from './moves';
import type { LogRow } from './log';

/**
 * Lets the batch's trigger events in. Returns, per user who entered, the index of the event that let them in: the
 * batch's events of that user up to it are not applied to the instance (the user was not in it yet), later ones are.
 * A user enters at most once per batch.
 */
export async function enterByEvents(mover: Mover, events: LogRow['events'], data: TenantData, letters: DeadLetterBatch): Promise<Map<number, number>> {
  const enteredAt = new Map<number, number>();
  const workflow = mover.workflow;
  const trigger = workflow.trigger;
  if (!trigger) return enteredAt;
  const type = trigger.trigger.event;
  const eligible = triggeredUsers(events, type);
  if (eligible.size === 0) return enteredAt;

  if (trigger.trigger.crowd) eligible.andInPlace(data.crowd(trigger.trigger.crowd) ?? new RoaringBitmap32());
  const again = trigger.trigger.reentry === 'again';
  for (const [step, users] of mover.shard.steps) if (!(again && workflow.exitSteps.has(step))) eligible.andNotInPlace(users);
  // Whatever `reentry` says: a user who met the exit criteria is out of this instance for good.
  for (const users of mover.shard.exited.values()) eligible.andNotInPlace(users);
  if (eligible.size === 0) return enteredAt;

  const condition = trigger.condition;
  const profiles = condition?.usesProfile ? await data.profilesOf(eligible, profileKeysOfAll([condition.text])) : null;
  const instanceId = mover.shard.instanceId;
  for (let e = 0; e < events.length; e++) {
    const event = events[e];
    if (event.type !== type || enteredAt.has(event.user) || !eligible.has(event.user)) continue;
    if (condition) {
      const input = { user: event.user, now: mover.now, event: event as ConditionEvent, profile: profiles?.get(event.user) };
      if (!letters.holds(condition, input, data.membership, { instanceId, step: workflow.entry, index: e, field: 'entry.condition' })) continue;
    }
    enteredAt.set(event.user, e);
  }
  if (enteredAt.size === 0) return enteredAt;

  const newcomers = condition ? RoaringBitmap32.from(Uint32Array.from(enteredAt.keys()).sort()) : eligible;
  if (again) {
    for (const exit of workflow.exitSteps) {
      const resting = mover.shard.steps.get(exit);
      if (!resting || resting.size === 0) continue;
      const returning = RoaringBitmap32.and(newcomers, resting);
      if (returning.size === 0) continue;
      mover.moveBulk(returning, exit, workflow.entry);
      newcomers.andNotInPlace(returning);
    }
  }
  mover.moveBulk(newcomers, null, workflow.entry);
  return enteredAt;
}

/** The users of the batch with at least one event of `type`. */
function triggeredUsers(events: LogRow['events'], type: string): RoaringBitmap32 {
  const ids = new Uint32Array(events.length);
  let count = 0;
  for (const event of events) if (event.type === type) ids[count++] = event.user;
  return RoaringBitmap32.from(ids.subarray(0, count));
}
