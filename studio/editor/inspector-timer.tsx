'use client';
import { useId } from 'react';
import { cronProblem, describeCron, timeZoneProblem } from '../../core/model/cron';
import { ProfileAttributePath } from '../../core/model/workflow';
import type { StepData, TimerData } from '../convert';
import { formatCount } from '../ui';
import { ConditionEditor } from './condition';
import { useCanvasInfo } from './context';
import { useFieldCatalog, type ProfileField } from './fields';
import { Text } from './inspector-text';

/** The attribute a new "each user's own zone" timer reads until the marketer names another. */
const DEFAULT_ZONE_ATTRIBUTE = 'timezone';

/** What the zone attribute's field says: why the path cannot be used, or how many profiles hold it. */
function attributeHint(path: string, fields: ProfileField[]): { ok: boolean; text: string } {
  const shape = ProfileAttributePath.safeParse(path);
  if (!shape.success) return { ok: false, text: shape.error.issues[0].message };
  const field = fields.find((f) => f.path === shape.data);
  if (field) return { ok: true, text: `Read from profile.${field.path}${field.users === undefined ? '' : ` (${formatCount(field.users)} users have it)`}` };
  // Not an error: profiles may be imported after the workflow is drawn.
  return {
    ok: true,
    text: fields.length > 0 ? `No profile has ${shape.data} yet: until one does, everyone fires in the default zone` : `Read from profile.${shape.data}`,
  };
}

/** A timer step's fields: its cron, the zone it fires in (one for everyone, or each user's own from a profile attribute), its condition. */
export function TimerFields({ node, update }: { node: { data: TimerData }; update: (patch: Partial<StepData>, field: string) => void }) {
  const { cron, tz, tzFromProfile, condition } = node.data;
  const { tenant } = useCanvasInfo();
  const { profileFields } = useFieldCatalog(tenant);
  const listId = useId();
  const local = tzFromProfile !== undefined;
  const problem = cronProblem(cron);
  const tzProblem = tz === undefined ? null : timeZoneProblem(tz.trim());
  const attribute = local ? attributeHint(tzFromProfile, profileFields) : null;
  return (
    <>
      <label>
        Cron (second minute hour day month weekday)
        <input value={cron} onChange={(e) => update({ cron: e.target.value }, 'cron')} data-testid="cron-input" />
      </label>
      <p className={problem ? 'field-error' : 'muted small'} data-testid="cron-description">
        {problem ?? describeCron(cron, tzProblem ? undefined : tz, attribute?.ok ? tzFromProfile : undefined)}
      </p>
      <label>
        Fires in
        <select
          value={local ? 'user' : 'one'}
          onChange={(e) => update({ tzFromProfile: e.target.value === 'user' ? DEFAULT_ZONE_ATTRIBUTE : undefined }, 'tzFromProfile')}
          data-testid="tz-mode"
        >
          <option value="one">One time zone for everyone</option>
          <option value="user">Each user’s own time zone (a profile attribute)</option>
        </select>
      </label>
      {local && (
        <>
          <Text
            label="Profile attribute holding the user’s zone"
            value={tzFromProfile}
            // Empty stays "each user's zone" (and shows why it cannot run) until the marketer picks "one time zone".
            onChange={(v) => update({ tzFromProfile: v ?? '' }, 'tzFromProfile')}
            placeholder={DEFAULT_ZONE_ATTRIBUTE}
            testId="tz-attribute-input"
            hint={attribute}
            list={listId}
          />
          <datalist id={listId}>
            {profileFields
              .filter((f) => f.type === undefined || f.type === 'string')
              .map((f) => (
                <option key={f.path} value={f.path} label={f.topValues.map((v) => v.value).join(', ') || undefined} />
              ))}
          </datalist>
        </>
      )}
      <Text
        label={local ? 'Zone of users without a valid one (IANA, empty = UTC)' : 'Time zone (IANA, empty = UTC)'}
        value={tz}
        onChange={(v) => update({ tz: v }, 'tz')}
        placeholder={local ? 'UTC' : 'Europe/Amsterdam'}
        testId="tz-input"
        hint={tzProblem ? { ok: false, text: tzProblem } : null}
      />
      <ConditionEditor label="Only users where (optional)" optional value={condition} onChange={(text) => update({ condition: text }, 'condition')} />
    </>
  );
}
