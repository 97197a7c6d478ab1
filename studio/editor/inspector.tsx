'use client';
import { useState } from 'react';
import { Duration, parseDuration } from '../../core/model/workflow';
import { outputHandles, type BranchData, type StepData, type StepNode } from '../convert';
import { ConditionEditor } from './condition';
import { StepExitedLine } from './exit-criteria';
import { StepGoalLine } from './goal-result';
import { useDeleteSteps } from './delete-step';
import { ExperimentFields } from './experiment';
import { EnterActionField } from './inspector-actions';
import { Text } from './inspector-text';
import { TimerFields } from './inspector-timer';
import { KIND_ICON, KIND_LABEL } from './nodes';
import { UserPathPanel } from './user-path';
import { PathPreviewPanel } from './path-preview';
import { WorkflowPanel } from './workflow-panel';
import { useEditor, useEditorStore } from './store';

const UNITS: [number, string][] = [
  [86_400_000, 'day'],
  [3_600_000, 'hour'],
  [60_000, 'minute'],
  [1000, 'second'],
];

/** "1h30m" → "1 hour 30 minutes"; a typo says how to write a duration, as the validator would. */
export function durationHint(value: string | undefined, optional: boolean): { ok: boolean; text: string } | null {
  if (!value?.trim()) return optional ? null : { ok: false, text: 'Write how long, e.g. 30m, 2h, 7d or 1h30m' };
  if (!Duration.safeParse(value).success) return { ok: false, text: `“${value}” is not a duration; write e.g. 30s, 5m, 2h, 7d or 1h30m` };
  let rest = parseDuration(value);
  if (rest <= 0) return { ok: false, text: 'A duration must be longer than 0' };
  const parts: string[] = [];
  for (const [ms, unit] of UNITS) {
    const n = Math.floor(rest / ms);
    rest -= n * ms;
    if (n > 0) parts.push(`${n} ${unit}${n === 1 ? '' : 's'}`);
  }
  return { ok: true, text: `= ${parts.join(' ')}` };
}

/** The selected step's fields. Every change goes through the store (one undo step per field edit). */
export function Inspector({ readOnly }: { readOnly: boolean }) {
  const store = useEditorStore();
  const deleteStep = useDeleteSteps();
  const selectedId = useEditor((s) => s.selectedId);
  const node = useEditor((s) => s.nodes.find((n) => n.id === s.selectedId));
  const isEntry = useEditor((s) => s.nodes[0]?.id === s.selectedId);
  const problems = useEditor((s) => s.problems);
  if (!selectedId || !node) {
    const general = problems.filter((p) => p.step === null);
    return (
      <aside className="inspector" data-testid="inspector">
        <p className="muted">Select a step to edit it, or drag one from the palette.</p>
        <WorkflowPanel readOnly={readOnly} />
        <UserPathPanel />
        <PathPreviewPanel />
        {general.map((p) => (
          <p key={p.message} className="field-error" data-testid="workflow-problem">
            {p.text}
          </p>
        ))}
      </aside>
    );
  }
  const update = (patch: Partial<StepData>, field: string) => !readOnly && store.updateData(node.id, patch, field);
  const mine = problems.filter((p) => p.nodeId === node.id);
  return (
    <aside className="inspector" data-testid="inspector">
      <h2>
        {KIND_ICON[node.type!]} {KIND_LABEL[node.type!]} step
      </h2>
      <StepGoalLine step={node.data.name} />
      <StepExitedLine step={node.data.name} />
      <fieldset disabled={readOnly}>
        <Text label="Name" value={node.data.name} onChange={(v) => update({ name: v ?? '' }, 'name')} testId="step-name-input" />
        <Text
          label="Label (shown on the canvas)"
          value={node.data.label}
          onChange={(v) => update({ label: v }, 'label')}
          placeholder="e.g. Signed up: what do they do first?"
          testId="step-label-input"
        />
        <label>
          Note for the team (not run)
          <textarea
            className="note-input"
            rows={2}
            value={node.data.note ?? ''}
            onChange={(e) => update({ note: e.target.value || undefined }, 'note')}
            placeholder="Why this step is here, who owns it…"
            data-testid="step-note-input"
          />
        </label>
        <KindFields key={node.id} node={node} update={update} />
        <h3>Actions</h3>
        <EnterActionField key={`enter-action:${node.id}`} value={node.data.enterAction} onChange={(v) => update({ enterAction: v }, 'enterAction')} />
        <Text label="On leave (action tag)" value={node.data.leaveAction} onChange={(v) => update({ leaveAction: v }, 'leaveAction')} />
        <Text
          label="Re-evaluate when idle for (ttl)"
          value={node.data.ttl}
          onChange={(v) => update({ ttl: v }, 'ttl')}
          placeholder="e.g. 1d"
          testId="ttl-input"
          hint={durationHint(node.data.ttl, true)}
        />
        <div className="row inspector-actions">
          {!isEntry && (
            <button type="button" onClick={() => store.makeEntry(node.id)}>
              Make entry step
            </button>
          )}
          {node.type === 'exit' && (
            <button type="button" onClick={() => store.setKind(node.id, 'direct')}>
              Continue to a next step
            </button>
          )}
          <button type="button" className="danger" onClick={deleteStep}>
            Delete step
          </button>
        </div>
      </fieldset>
      {mine.length > 0 && (
        <div className="problems-box" data-testid="inspector-problems">
          {mine.map((p) => (
            <p key={p.code + p.message} className="field-error">
              {p.text}
            </p>
          ))}
        </div>
      )}
    </aside>
  );
}

/** Where an output leads, by the target step's name. */
function Target({ node, handle }: { node: StepNode; handle: string }) {
  const target = useEditor((s) => {
    const edge = s.edges.find((e) => e.source === node.id && (e.sourceHandle ?? 'next') === handle);
    return edge ? s.nodes.find((n) => n.id === edge.target)?.data.name : undefined;
  });
  return (
    <p className={target ? 'muted small target' : 'field-error target'} data-testid={`target-${handle}`}>
      {target ? `→ goes to “${target}”` : '→ not connected: drag from its handle on the canvas, or use “+”'}
    </p>
  );
}

/** Users who match no branch within `after` of entering leave through the "after …" output ("did they buy within 2d?"). */
function WaitTimeout({ node, timeout, update }: { node: StepNode; timeout: BranchData['timeout']; update: (patch: Partial<StepData>, field: string) => void }) {
  if (!timeout) {
    return (
      <button type="button" onClick={() => update({ timeout: { after: '2d' } }, 'timeout')} data-testid="timeout-add">
        Add a wait timeout
      </button>
    );
  }
  return (
    <div className="branch-item" data-testid="timeout">
      <Text
        label="If no branch matched within"
        value={timeout.after}
        onChange={(after) => update({ timeout: { after: after ?? '' } }, 'timeout')}
        placeholder="2d"
        testId="timeout-input"
        hint={durationHint(timeout.after, false)}
      />
      <Target node={node} handle="timeout" />
      <button type="button" className="link danger" onClick={() => update({ timeout: undefined }, 'timeout-remove')} data-testid="timeout-remove">
        Remove timeout
      </button>
    </div>
  );
}

function KindFields({ node, update }: { node: StepNode; update: (patch: Partial<StepData>, field: string) => void }) {
  const outputs = outputHandles(node);
  switch (node.type) {
    case 'branch': {
      const branches = node.data.branches;
      return (
        <>
          <h3>Branches (tried in order)</h3>
          {branches.map((branch, i) => (
            <div key={i} className="branch-item" data-testid={`branch-${i}`}>
              <Text
                label={`Branch ${i + 1} name (shown on its edge)`}
                value={branch.label}
                onChange={(label) => update({ branches: branches.map((b, j) => (j === i ? { ...b, label } : b)) }, `branch-${i}-label`)}
                placeholder={outputs[i]?.label}
                testId="branch-label-input"
              />
              <ConditionEditor
                label={branch.condition.trim() === 'true' ? 'Else (always true)' : `If ${i + 1}`}
                value={branch.condition}
                onChange={(text) => update({ branches: branches.map((b, j) => (j === i ? { ...b, condition: text ?? '' } : b)) }, `branch-${i}`)}
              />
              <Target node={node} handle={`branch-${i}`} />
              {branches.length > 1 && (
                <button type="button" className="link danger" onClick={() => update({ branches: branches.filter((_, j) => j !== i) }, 'branches')}>
                  Remove branch
                </button>
              )}
            </div>
          ))}
          <button type="button" onClick={() => update({ branches: [...branches, { condition: 'true' }] }, 'branches')}>
            Add branch
          </button>
          <WaitTimeout node={node} timeout={node.data.timeout} update={update} />
        </>
      );
    }
    case 'timer':
      return <TimerFields node={node} update={update} />;
    case 'delay':
      return (
        <Text
          label="Wait for"
          value={node.data.after}
          onChange={(v) => update({ after: v ?? '' }, 'after')}
          placeholder="30m, 2h, 7d, 1h30m"
          testId="delay-input"
          hint={durationHint(node.data.after, false)}
        />
      );
    case 'split': {
      const paths = node.data.paths;
      const sum = paths.reduce((total, p) => total + p.percent, 0);
      return (
        <>
          <h3>Paths</h3>
          {paths.map((path, i) => (
            <div key={i} className="row split-path">
              <label>
                Path {i + 1} (%)
                <input
                  type="number"
                  min={0}
                  max={100}
                  value={path.percent}
                  onChange={(e) => update({ paths: paths.map((p, j) => (j === i ? { percent: Number(e.target.value) } : p)) }, `path-${i}`)}
                />
              </label>
              <Target node={node} handle={`path-${i}`} />
              {paths.length > 2 && (
                <button type="button" className="link danger" onClick={() => update({ paths: paths.filter((_, j) => j !== i) }, 'paths')}>
                  Remove
                </button>
              )}
            </div>
          ))}
          <p className={sum === 100 ? 'muted small' : 'field-error'}>Total {sum}% (must be 100%)</p>
          <button type="button" onClick={() => update({ paths: [...paths, { percent: 0 }] }, 'paths')}>
            Add path
          </button>
          <ExperimentFields node={node} update={update} />
        </>
      );
    }
    case 'parallel':
      return <ActionList actions={node.data.actions} onChange={(actions) => update({ actions }, 'actions')} />;
    default:
      return null;
  }
}

const splitActions = (text: string) => text.split(',').map((a) => a.trim());

/**
 * A parallel step's actions as typed: the box keeps the marketer's text ("a, " while the next name is on its way)
 * rather than showing the list re-joined after every keystroke; a change from outside (undo) is read back.
 */
function ActionList({ actions, onChange }: { actions: string[]; onChange: (actions: string[]) => void }) {
  const [text, setText] = useState(actions.join(', '));
  const [shown, setShown] = useState(actions);
  if (actions !== shown) {
    setShown(actions);
    if (splitActions(text).join(',') !== actions.join(',')) setText(actions.join(', '));
  }
  return (
    <label>
      Actions (comma separated)
      <input
        value={text}
        onChange={(e) => {
          setText(e.target.value);
          onChange(splitActions(e.target.value));
        }}
        data-testid="actions-input"
      />
    </label>
  );
}
