'use client';
import { useState } from 'react';
import { apiCall, apiGet, pathSegment, tenantPath } from '../api';
import type { SplitData, StepData, StepNode } from '../convert';
import type { WorkflowView } from '../model';
import { setQueryData } from '../query';
import { Dialog, ErrorBox, formatCount } from '../ui';
import { experimentResult, MIN_PATH_USERS, WIN_PROBABILITY, type ExperimentResult } from '../../core/model/experiment';
import { MIN_OUTCOMES } from '../../core/model/lift';
import type { Experiment } from '../../core/model/workflow';
import { useCanvasInfo, useCounts } from './context';
import { Text } from './inspector-text';
import { useOperation } from './operations';
import { useEditor, useEditorStore } from './store';
import { workflowKey } from './toolbar';

// A split step run as an experiment (issue 37 §5): "Run as experiment" and its automatic rule in the inspector, and on
// a running journey each path's figures (the API's own experimentResult() over the live counts) and "Send the rest to
// <path>", asked once more in a dialog before the new version is made and applied.

const percent = (share: number | null) => (share === null ? '–' : `${Math.round(share * 1000) / 10}%`);
/** A probability: the ends are never quite 0 or 1, so they say so rather than round to them. */
const chance = (p: number) => (p > 0.999 ? '>99.9%' : p < 0.001 ? '<0.1%' : percent(p));
const DECIDED_BY = { manual: 'by hand', date: 'at its date', significance: 'once it was significant' } as const;

type Update = (patch: Partial<StepData>, field: string) => void;

export function ExperimentFields({ node, update }: { node: Extract<StepNode, { type: 'split' }>; update: Update }) {
  const experiment = node.data.experiment;
  const goal = useEditor((s) => s.extras.goal);
  const set = (next: Experiment | undefined) => update({ experiment: next }, 'experiment');
  const setAuto = (patch: NonNullable<Experiment['autoWinner']>) => {
    const auto = { ...experiment?.autoWinner, ...patch };
    if (!auto.significance) delete auto.significance;
    if (!auto.after) delete auto.after;
    set({ ...experiment, autoWinner: Object.keys(auto).length ? auto : undefined });
  };
  return (
    <>
      <label className="inline">
        <input type="checkbox" checked={experiment !== undefined} onChange={(e) => set(e.target.checked ? {} : undefined)} data-testid="experiment-toggle" />
        Run as experiment
      </label>
      {experiment && (
        <div className="branch-item experiment" data-testid="experiment-fields">
          <p className="muted small">
            {goal
              ? "Its paths are compared on the journey's goal: each path's conversion, with a 95% interval and the chance it is best."
              : "An experiment compares its paths on the journey's goal: give the journey a goal first (select nothing, then Goal)."}
          </p>
          {experiment.winner ? (
            <p className="small" data-testid="experiment-decided">
              <strong>“{experiment.winner.path}” won</strong> (decided {DECIDED_BY[experiment.winner.by]}): everyone new goes there.
            </p>
          ) : (
            <>
              <label className="inline">
                <input
                  type="checkbox"
                  checked={experiment.autoWinner?.significance === true}
                  onChange={(e) => setAuto({ significance: e.target.checked })}
                  data-testid="experiment-significance"
                />
                Send the rest to a path once it is best with {WIN_PROBABILITY * 100}% probability
              </label>
              <Text
                label="…or pick the leader on (UTC, RFC 3339)"
                value={experiment.autoWinner?.after}
                onChange={(after) => setAuto({ after })}
                placeholder="2026-03-01T09:00:00Z"
                testId="experiment-after"
              />
            </>
          )}
          <ExperimentResults node={node} />
        </div>
      )}
    </>
  );
}

/** The running instance's figures of this experiment, and the button that sends the rest to a path. */
function ExperimentResults({ node }: { node: Extract<StepNode, { type: 'split' }> }) {
  const counts = useCounts();
  const { live } = useCanvasInfo();
  const figures = counts?.experiments?.[node.data.name];
  const [sending, setSending] = useState<string | null>(null);
  const [done, setDone] = useState<string | null>(null);
  if (!figures) return null;
  const result = experimentResult(figures);
  const open = live && !result.winner;
  return (
    <div data-testid="experiment-results">
      <table className="goal-steps">
        <thead>
          <tr>
            <th scope="col">Path</th>
            <th scope="col">Users</th>
            <th scope="col">Converted</th>
            <th scope="col">95% interval</th>
            <th scope="col">Best</th>
          </tr>
        </thead>
        <tbody>
          {result.paths.map((path) => (
            <tr key={path.path} data-testid="experiment-path" className={path.path === (result.winner ?? result.leader) ? 'leader' : undefined}>
              <td>→ {path.path}</td>
              <td>{formatCount(path.entered)}</td>
              <td>
                {formatCount(path.converted)} · {percent(path.rate)}
              </td>
              <td>{path.interval ? `${percent(path.interval.low)}–${percent(path.interval.high)}` : '–'}</td>
              <td>{chance(path.probabilityBest)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <p className="muted small" data-testid="experiment-verdict">
        {verdict(result)}
      </p>
      {done && (
        <p className="muted small" data-testid="experiment-sent">
          {done}
        </p>
      )}
      {open &&
        result.paths.map((path) => (
          <button key={path.path} type="button" onClick={() => setSending(path.path)} data-testid={`experiment-send-${path.path}`}>
            Send the rest to “{path.path}”
          </button>
        ))}
      {sending && <SendDialog step={node.data.name} nodeId={node.id} path={sending} onClose={() => setSending(null)} onSent={setDone} />}
    </div>
  );
}

/** In words: who is ahead, and whether that can be trusted yet. */
function verdict(result: ExperimentResult): string {
  if (result.winner) return 'Users already past the split keep their paths, and each path goes on counting its conversions.';
  const leader = result.paths.find((p) => p.path === result.leader);
  if (!leader || result.paths.every((p) => p.entered === 0)) return 'No users have taken a path yet.';
  if (!result.enoughData)
    return `Too early to call: each path needs ${MIN_PATH_USERS} users, ${MIN_OUTCOMES} who converted and ${MIN_OUTCOMES} who did not. “${leader.path}” leads for now.`;
  if (result.significant) return `“${leader.path}” is best with ${chance(leader.probabilityBest)} probability.`;
  return `No clear winner yet: “${leader.path}” leads with ${chance(leader.probabilityBest)} (${WIN_PROBABILITY * 100}% calls it).`;
}

/** Asks before sending the rest: it saves a version and applies it to the running instance. */
function SendDialog({
  step,
  nodeId,
  path,
  onClose,
  onSent,
}: {
  step: string;
  nodeId: string;
  path: string;
  onClose: () => void;
  onSent: (words: string) => void;
}) {
  const { tenant, workflowId, instanceId } = useCanvasInfo();
  const store = useEditorStore();
  const op = useOperation(tenant, workflowId);
  async function send() {
    const clean = !store.get().dirty;
    const ok = await op.run(() =>
      apiCall<{ procedureId: string }>('POST', tenantPath(tenant, `/instances/${instanceId}/experiments/${pathSegment(step)}/winner`), { path }),
    );
    if (!ok) return;
    const saved = await apiGet<WorkflowView>(tenantPath(tenant, `/workflows/${workflowId}`));
    setQueryData(workflowKey(tenant, workflowId), saved);
    // The split takes the winner's weights in the document as it is (unsaved edits stay, and a save keeps them); with
    // nothing unsaved, the document is the version now running, saved.
    const split = saved.definition.steps.find((s) => s.name === step);
    if (split?.kind === 'split') {
      store.updateData(
        nodeId,
        { paths: split.paths.map((p) => ({ percent: p.percent })), experiment: split.experiment } satisfies Partial<SplitData>,
        'experiment',
      );
      if (clean) store.markSaved();
    }
    onSent(`Saved as v${saved.version} and applied to the running instance.`);
    onClose();
  }
  return (
    <Dialog title={`Send the rest to “${path}”?`} onClose={onClose} testId="experiment-dialog">
      <div className="dialog-body">
        <p>
          Every user who enters “{step}” from now on takes the path to “{path}”. Users already past “{step}” keep their paths, and the figures of every path
          stay.
        </p>
        <p className="muted small">This saves a new version of the journey, with “{path}” at 100%, and applies it to the running instance.</p>
        {op.state && <p className="muted small">{op.state}</p>}
        {op.error && <ErrorBox error={op.error} />}
        <div className="row">
          <button type="button" className="primary" disabled={op.busy} onClick={() => void send()} data-testid="experiment-confirm">
            {op.busy ? 'Sending…' : `Send the rest to “${path}”`}
          </button>
          <button type="button" onClick={onClose}>
            Cancel
          </button>
        </div>
      </div>
    </Dialog>
  );
}
