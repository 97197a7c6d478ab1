'use client';
import { describeCron, cronProblem } from '../../server/model/cron';
import type { StepData, StepNode } from '../convert';
import { ConditionEditor } from './condition';
import { KIND_ICON, KIND_LABEL } from './nodes';
import { useEditor, useEditorStore } from './store';

function Text({ label, value, onChange, placeholder, testId }: { label: string; value: string | undefined; onChange: (v: string | undefined) => void; placeholder?: string; testId?: string }) {
  return (
    <label>
      {label}
      <input value={value ?? ''} placeholder={placeholder} onChange={(e) => onChange(e.target.value === '' ? undefined : e.target.value)} data-testid={testId} />
    </label>
  );
}

/** The selected step's fields. Every change goes through the store (one undo step per field edit). */
export function Inspector({ readOnly }: { readOnly: boolean }) {
  const store = useEditorStore();
  const selectedId = useEditor((s) => s.selectedId);
  const node = useEditor((s) => s.nodes.find((n) => n.id === s.selectedId));
  const isEntry = useEditor((s) => s.nodes[0]?.id === s.selectedId);
  const problems = useEditor((s) => s.problems);
  if (!selectedId || !node) {
    const general = problems.filter((p) => p.step === null);
    return (
      <aside className="inspector" data-testid="inspector">
        <p className="muted">Select a step to edit it, or drag one from the palette.</p>
        {general.map((p) => (
          <p key={p.message} className="field-error">
            {p.message}
          </p>
        ))}
      </aside>
    );
  }
  const update = (patch: Partial<StepData>, field: string) => !readOnly && store.updateData(node.id, patch, field);
  const mine = problems.filter((p) => p.step === node.data.name);
  return (
    <aside className="inspector" data-testid="inspector">
      <h2>
        {KIND_ICON[node.type!]} {KIND_LABEL[node.type!]} step
      </h2>
      <fieldset disabled={readOnly}>
        <Text label="Name" value={node.data.name} onChange={(v) => update({ name: v ?? '' }, 'name')} testId="step-name-input" />
        <KindFields key={node.id} node={node} update={update} />
        <h3>Actions</h3>
        <Text label="On enter (action tag)" value={node.data.enterAction} onChange={(v) => update({ enterAction: v }, 'enterAction')} placeholder="e.g. send-welcome-email" />
        <Text label="On leave (action tag)" value={node.data.leaveAction} onChange={(v) => update({ leaveAction: v }, 'leaveAction')} />
        <Text label="Re-evaluate when idle for (ttl)" value={node.data.ttl} onChange={(v) => update({ ttl: v }, 'ttl')} placeholder="e.g. 1d" />
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
          <button type="button" className="danger" onClick={() => store.deleteSelected()}>
            Delete step
          </button>
        </div>
      </fieldset>
      {mine.length > 0 && (
        <div className="problems-box" data-testid="inspector-problems">
          {mine.map((p) => (
            <p key={p.code + p.message} className="field-error">
              {p.message}
            </p>
          ))}
        </div>
      )}
    </aside>
  );
}

function KindFields({ node, update }: { node: StepNode; update: (patch: Partial<StepData>, field: string) => void }) {
  switch (node.type) {
    case 'branch': {
      const branches = node.data.branches;
      return (
        <>
          <h3>Branches (tried in order)</h3>
          {branches.map((branch, i) => (
            <div key={i} className="branch-item" data-testid={`branch-${i}`}>
              <ConditionEditor
                label={`If ${i + 1}`}
                value={branch.condition}
                onChange={(text) => update({ branches: branches.map((b, j) => (j === i ? { condition: text ?? '' } : b)) }, `branch-${i}`)}
              />
              {branches.length > 2 && (
                <button type="button" className="link danger" onClick={() => update({ branches: branches.filter((_, j) => j !== i) }, 'branches')}>
                  Remove branch
                </button>
              )}
            </div>
          ))}
          <button type="button" onClick={() => update({ branches: [...branches, { condition: 'true' }] }, 'branches')}>
            Add branch
          </button>
        </>
      );
    }
    case 'timer': {
      const problem = cronProblem(node.data.cron);
      return (
        <>
          <label>
            Cron (second minute hour day month weekday, UTC)
            <input value={node.data.cron} onChange={(e) => update({ cron: e.target.value }, 'cron')} data-testid="cron-input" />
          </label>
          <p className={problem ? 'field-error' : 'muted small'} data-testid="cron-description">
            {problem ?? describeCron(node.data.cron)}
          </p>
          <ConditionEditor label="Only users where (optional)" optional value={node.data.condition} onChange={(text) => update({ condition: text }, 'condition')} />
        </>
      );
    }
    case 'delay':
      return (
        <label>
          Wait for
          <input value={node.data.after} onChange={(e) => update({ after: e.target.value }, 'after')} placeholder="30m, 2h, 7d, 1h30m" />
        </label>
      );
    case 'split': {
      const paths = node.data.paths;
      const sum = paths.reduce((total, p) => total + p.percent, 0);
      return (
        <>
          <h3>Paths</h3>
          {paths.map((path, i) => (
            <div key={i} className="row">
              <label>
                Path {i + 1} (%)
                <input type="number" min={0} max={100} value={path.percent} onChange={(e) => update({ paths: paths.map((p, j) => (j === i ? { percent: Number(e.target.value) } : p)) }, `path-${i}`)} />
              </label>
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
        </>
      );
    }
    case 'parallel':
      return (
        <label>
          Actions (comma separated)
          <input
            value={node.data.actions.join(', ')}
            onChange={(e) => update({ actions: e.target.value.split(',').map((a) => a.trim()) }, 'actions')}
          />
        </label>
      );
    default:
      return null;
  }
}
