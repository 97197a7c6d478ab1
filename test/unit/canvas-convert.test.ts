import { describe, expect, it } from 'vitest';
import { validateWorkflow } from '../../core/model/validate';
import type { WorkflowDefinition } from '../../core/model/workflow';
import { welcomeJourney, welcomeJourneyDraft } from '../../core/model/sample-workflows';
import {
  branchLabel,
  canvasProblems,
  definitionToGraph,
  graphToDefinition,
  layout,
  makeEdge,
  NODE_HEIGHT,
  NODE_WIDTH,
  outputHandles,
  type StepNode,
} from '../../studio/convert';

const EVERY_KIND: WorkflowDefinition = {
  steps: [
    { name: 'entry', kind: 'direct', next: 'choose', enterAction: 'welcome', ttl: '1h' },
    {
      name: 'choose',
      kind: 'branch',
      branches: [
        { condition: 'event.type == "purchase"', next: 'thanks' },
        { condition: 'true', next: 'wait' },
      ],
      leaveAction: 'left-choose',
    },
    { name: 'wait', kind: 'delay', after: '2d', next: 'nightly' },
    { name: 'nightly', kind: 'timer', cron: '0 0 2 * * *', condition: 'inCrowd("vip")', next: 'ab' },
    {
      name: 'ab',
      kind: 'split',
      paths: [
        { percent: 30, next: 'fanout' },
        { percent: 70, next: 'done' },
      ],
    },
    { name: 'fanout', kind: 'parallel', actions: ['email', 'push'], next: 'done' },
    { name: 'thanks', kind: 'parallel', actions: ['sms'] },
    { name: 'done', kind: 'direct' },
  ],
  stopAt: '2030-01-01T00:00:00Z',
};

describe('canvas ↔ definition', () => {
  it('round-trips every step kind, field and target exactly', () => {
    const { nodes, edges } = definitionToGraph(EVERY_KIND, null);
    expect(nodes.map((n) => n.type)).toEqual(['direct', 'branch', 'delay', 'timer', 'split', 'parallel', 'parallel', 'exit']);
    expect(edges).toHaveLength(8);
    const { definition } = graphToDefinition(nodes, edges, EVERY_KIND.stopAt);
    expect(definition).toEqual(EVERY_KIND);
    expect(validateWorkflow(definition)).toMatchObject({ ok: true });
  });

  it('keeps a branch timeout (an output handle labelled with its duration) and a timer zone through the canvas', () => {
    const definition: WorkflowDefinition = {
      steps: [
        { name: 'wait', kind: 'branch', branches: [{ condition: 'event.type == "purchase"', next: 'bought' }], timeout: { after: '2d', next: 'remind' } },
        { name: 'remind', kind: 'timer', cron: '0 0 9 * * *', tz: 'Europe/Amsterdam', next: 'bought' },
        { name: 'bought', kind: 'direct' },
      ],
    };
    const { nodes, edges } = definitionToGraph(definition, null);
    expect(outputHandles(nodes[0])).toEqual([
      { id: 'branch-0', label: 'purchase', title: 'event.type == "purchase"' },
      { id: 'timeout', label: 'after 2d' },
    ]);
    expect(graphToDefinition(nodes, edges).definition).toEqual(definition);
  });

  it("keeps a split's experiment (its rule and its winner) through the canvas", () => {
    const split = (experiment: object) =>
      ({
        steps: [
          {
            name: 'ab',
            kind: 'split',
            paths: [
              { percent: 0, next: 'a' },
              { percent: 100, next: 'b' },
            ],
            experiment,
          },
          { name: 'a', kind: 'direct' },
          { name: 'b', kind: 'direct' },
        ],
      }) as WorkflowDefinition;
    for (const experiment of [
      { autoWinner: { after: '2030-01-01T09:00:00Z', significance: true } },
      { winner: { path: 'b', at: '2030-01-01T09:00:00Z', by: 'manual' } },
    ]) {
      const { nodes, edges } = definitionToGraph(split(experiment), null);
      expect(graphToDefinition(nodes, edges, undefined).definition).toEqual(split(experiment));
    }
  });

  it('keeps positions in the draft, keyed by step name, never in the definition', () => {
    const draft = { positions: Object.fromEntries(EVERY_KIND.steps.map((s, i) => [s.name, { x: i * 10, y: i * 20 }])), labels: {} };
    const { nodes, edges } = definitionToGraph(EVERY_KIND, draft);
    expect(nodes[3].position).toEqual({ x: 30, y: 60 });
    const saved = graphToDefinition(nodes, edges, EVERY_KIND.stopAt);
    expect(saved.draft.positions).toEqual(draft.positions);
    expect(JSON.stringify(saved.definition)).not.toContain('"x"');
  });

  it('lays out a definition without positions so no two nodes overlap', () => {
    const { nodes } = definitionToGraph(EVERY_KIND, { positions: {}, labels: {} });
    const spots = new Set(nodes.map((n) => `${n.position.x},${n.position.y}`));
    expect(spots.size).toBe(nodes.length);
    expect(nodes[0].position.y).toBeLessThan(nodes[1].position.y);
  });

  it("seeds the demo journey with every output's step below it, left to right in the outputs' order, none on another", () => {
    const { nodes, edges } = definitionToGraph(welcomeJourney, welcomeJourneyDraft);
    const at = new Map(nodes.map((n) => [n.id, n.position]));
    for (const node of nodes) {
      const xs = outputHandles(node).map((h) => at.get(edges.find((e) => e.source === node.id && e.sourceHandle === h.id)!.target)!.x);
      expect(xs, node.data.name).toEqual([...xs].sort((a, b) => a - b));
      for (const target of edges.filter((e) => e.source === node.id))
        expect(at.get(target.target)!.y, `${node.data.name} → ${target.target}`).toBeGreaterThan(node.position.y);
    }
    for (const a of nodes) {
      for (const b of nodes) {
        if (a === b) continue;
        const apart = Math.abs(a.position.x - b.position.x) >= NODE_WIDTH + 20 || Math.abs(a.position.y - b.position.y) >= NODE_HEIGHT + 60;
        expect(apart, `${a.data.name} / ${b.data.name}`).toBe(true);
      }
    }
  });

  it('edges survive a rename because node ids are not step names', () => {
    const { nodes, edges } = definitionToGraph(EVERY_KIND, null);
    const renamed = nodes.map((n): StepNode => (n.data.name === 'wait' ? ({ ...n, data: { ...n.data, name: 'cool_off' } } as StepNode) : n));
    const { definition } = graphToDefinition(renamed, edges);
    const choose = definition.steps.find((s) => s.name === 'choose');
    expect(choose).toMatchObject({ branches: [{ next: 'thanks' }, { next: 'cool_off' }] });
    expect(definition.steps.find((s) => s.name === 'cool_off')).toMatchObject({ kind: 'delay', next: 'nightly' });
  });

  it('an unconnected branch output becomes a problem validateWorkflow() pins on that step', () => {
    const { nodes, edges } = definitionToGraph(EVERY_KIND, null);
    const withoutElse = edges.filter((e) => !(e.source === 'step-choose' && e.sourceHandle === 'branch-1'));
    const { definition } = graphToDefinition(nodes, withoutElse);
    const result = validateWorkflow(definition);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.problems.map((p) => p.step)).toContain('choose');
    // on the canvas the technical `next: ""` problems become one that names the output to connect
    const shown = canvasProblems(nodes, withoutElse, result.problems).filter((p) => p.step === 'choose');
    expect(shown).toEqual([{ step: 'choose', code: 'unconnected', message: 'Step "choose": connect output “else” to the step users go to next' }]);
  });

  it('gives branch and split nodes one labelled output per path', () => {
    const { nodes } = definitionToGraph(EVERY_KIND, null);
    expect(outputHandles(nodes[1])).toEqual([
      { id: 'branch-0', label: 'purchase', title: 'event.type == "purchase"' },
      { id: 'branch-1', label: 'else' },
    ]);
    expect(outputHandles(nodes[4]).map((h) => h.label)).toEqual(['30%', '70%']);
    expect(outputHandles(nodes[7])).toEqual([]);
  });

  it('labels a branch output with its name, else its condition in a few words, shortened to fit an edge', () => {
    const branch = (condition: string, label?: string) => branchLabel({ condition, ...(label ? { label } : {}) }, 0);
    expect(branch('event.type == "open" && profile.plan == "pro"')).toEqual({
      label: 'open and plan = pro',
      title: 'event.type == "open" && profile.plan == "pro"',
    });
    expect(branch('inCrowd("engaged") || (profile.country == "NL" && profile.age >= 30)').label).toBe('in engaged or (country =…');
    expect(branch('event.data.amount >= 100 && inCrowd("vip")').label).toBe('amount ≥ 100 and in vip');
    expect(branch('!inCrowd("vip")').label).toBe('not in vip');
    expect(branch('profile.plan in ["free", "trial"]').label).toBe('plan in free, trial');
    // CEL the rule builder cannot show is shown as written
    expect(branch('size(event.data.items) > 2').label).toBe('size(event.data.items) > 2');
    expect(branch('event.type == "open"', 'Opened the mail')).toEqual({ label: 'Opened the mail', title: 'Opened the mail: event.type == "open"' });
    expect(branch('true')).toEqual({ label: 'else' });
  });

  it('keeps the names of branches in the draft, never in the definition', () => {
    const { nodes, edges } = definitionToGraph(EVERY_KIND, { positions: {}, labels: {}, branchLabels: { choose: ['Bought', ''] } });
    expect(outputHandles(nodes[1]).map((h) => h.label)).toEqual(['Bought', 'else']);
    const saved = graphToDefinition(nodes, edges, EVERY_KIND.stopAt);
    expect(saved.definition).toEqual(EVERY_KIND);
    expect(saved.draft.branchLabels).toEqual({ choose: ['Bought', ''] });
  });

  it('a lone entry step keeps its output so the journey can be drawn on from it', () => {
    const { nodes } = definitionToGraph({ steps: [{ name: 'start', kind: 'direct' }] }, null);
    expect(nodes[0].type).toBe('direct');
    expect(outputHandles(nodes[0])).toEqual([{ id: 'next' }]);
    expect(graphToDefinition(nodes, []).definition).toEqual({ steps: [{ name: 'start', kind: 'direct' }] });
  });

  it('a newly connected direct step stops being an exit', () => {
    const nodes = layout(
      [
        { id: 'a', type: 'direct', position: { x: 0, y: 0 }, data: { name: 'a' } },
        { id: 'b', type: 'exit', position: { x: 0, y: 0 }, data: { name: 'b' } },
      ],
      [],
    );
    const { definition } = graphToDefinition(nodes, [makeEdge('a', 'next', 'b')]);
    expect(definition.steps).toEqual([
      { name: 'a', kind: 'direct', next: 'b' },
      { name: 'b', kind: 'direct' },
    ]);
  });
});
