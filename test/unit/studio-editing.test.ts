import { describe, expect, it } from 'vitest';
import { WorkflowDraft, type WorkflowDefinition } from '../../core/model/workflow';
import { definitionToGraph, extrasOf, graphToDefinition, layout, type StepNode } from '../../studio/convert';
import { freeSpot } from '../../studio/editor/placement';
import { validateCanvas } from '../../studio/editor/problems';
import { EditorStore } from '../../studio/editor/store';
import { celToQuery, queryToCel, unfinishedRule } from '../../studio/rules';
import { formatShare } from '../../studio/ui';

const BRANCHY: WorkflowDefinition = {
  steps: [
    {
      name: 'choose',
      kind: 'branch',
      branches: [
        { condition: 'event.type == "buy"', next: 'left' },
        { condition: 'event.type == "open"', next: 'middle' },
        { condition: 'true', next: 'right' },
      ],
    },
    { name: 'right', kind: 'direct' },
    { name: 'middle', kind: 'direct' },
    { name: 'left', kind: 'direct' },
  ],
};

describe('the rule builder while a marketer types', () => {
  it('reads back every prefix of "profile.plan" as a rule, so the builder never gives way to CEL', () => {
    for (let end = 1; end <= 'profile.plan'.length; end++) {
      const field = 'profile.plan'.slice(0, end);
      const cel = queryToCel({ combinator: 'and', rules: [{ field, operator: '=', value: '' }] });
      if (field.endsWith('.')) continue; // `profile. == ""` is not CEL; the builder keeps its own tree meanwhile
      const read = celToQuery(cel);
      expect(read.ok, `${field} → ${cel}`).toBe(true);
    }
    expect(celToQuery('inCrowd("")').ok).toBe(true);
  });

  it('says what a half-written rule still needs', () => {
    expect(unfinishedRule({ field: 'p', operator: '=', value: '' })).toBe(
      '“p” is not a field yet: fields start with profile., event.data., event.type, user or inCrowd',
    );
    expect(unfinishedRule({ field: 'profile.', operator: '=', value: '' })).toBe('Finish the field name: profile.<name>');
    expect(unfinishedRule({ field: 'inCrowd', operator: '=', value: '' })).toBe('Pick the crowd for “In crowd”');
    expect(unfinishedRule({ field: 'profile.plan', operator: '=', value: 'pro' })).toBeNull();
  });
});

describe('problems in canvas words', () => {
  it('names branches and fields as the canvas shows them, without repeating the step', () => {
    const { nodes, edges } = definitionToGraph(BRANCHY, null);
    const broken = nodes.map((n) =>
      n.type === 'branch' ? ({ ...n, data: { ...n.data, branches: [{ condition: 'event.type == ' }, ...n.data.branches.slice(1)] } } as StepNode) : n,
    );
    const problems = validateCanvas(broken, edges, undefined, 0);
    expect(problems.map((p) => [p.step, p.nodeId, p.text.replace(/: .*/, '')])).toEqual([['choose', 'step-choose', 'If 1 condition is not valid']]);
  });

  it('re-validates on every edit and clears a problem once it is fixed', () => {
    const { nodes, edges } = definitionToGraph(
      {
        steps: [
          { name: 'wait', kind: 'delay', after: '1d', next: 'end' },
          { name: 'end', kind: 'direct' },
        ],
      },
      null,
    );
    const store = new EditorStore(nodes, edges);
    expect(store.get().problems).toEqual([]);
    store.updateData('step-wait', { after: '2 days' }, 'after');
    expect(store.get().problems.map((p) => p.text)).toEqual(['Wait for "2 days" is not a duration; write e.g. 30s, 5m, 2h, 7d or 1h30m']);
    store.updateData('step-wait', { after: '2d' }, 'after');
    expect(store.get().problems).toEqual([]);
  });

  it('undoes and redoes entry and goal edits like step edits; switching the entry on and typing its event is one undo step', () => {
    const { nodes, edges } = definitionToGraph({ steps: [{ name: 'wait', kind: 'direct' }] }, null);
    const store = new EditorStore(nodes, edges);
    store.setExtras({ entry: { event: '', reentry: 'once' } });
    for (const event of ['s', 'si', 'signup']) store.setExtras({ entry: { event, reentry: 'once' } });
    store.setExtras({ goal: { condition: 'event.type == "purchase"' } });
    store.updateData('step-wait', { label: 'Waiting' }, 'label');
    const states = () => ({ extras: store.get().extras, label: store.get().nodes[0].data.label });
    expect(states()).toEqual({ extras: { entry: { event: 'signup', reentry: 'once' }, goal: { condition: 'event.type == "purchase"' } }, label: 'Waiting' });
    store.undo();
    expect(states()).toEqual({ extras: { entry: { event: 'signup', reentry: 'once' }, goal: { condition: 'event.type == "purchase"' } }, label: undefined });
    store.undo();
    expect(states().extras).toEqual({ entry: { event: 'signup', reentry: 'once' } });
    store.undo(); // the entry switched on and its event type typed within a moment: one step
    expect(states().extras).toEqual({});
    expect(store.get().canUndo).toBe(false);
    store.redo();
    expect(states().extras).toEqual({ entry: { event: 'signup', reentry: 'once' } });
    store.redo();
    expect(states()).toEqual({ extras: { entry: { event: 'signup', reentry: 'once' }, goal: { condition: 'event.type == "purchase"' } }, label: undefined });
  });
});

describe('exit criteria in the editor', () => {
  it('are typed as one undo step, validated with the workflow, saved in the definition and read back; emptied, they are gone', () => {
    const { nodes, edges } = definitionToGraph({ steps: [{ name: 'wait', kind: 'direct' }] }, null);
    const store = new EditorStore(nodes, edges);
    for (const condition of ['event.type ==', 'event.type == "unsubscribe"']) store.setExtras({ exit: { condition } });
    expect(store.get().problems).toEqual([]);
    const { definition } = graphToDefinition(store.get().nodes, store.get().edges, undefined, store.get().extras);
    expect(definition.exit).toEqual({ condition: 'event.type == "unsubscribe"' });
    expect(extrasOf(definition).exit).toEqual(definition.exit);
    store.setExtras({ exit: { condition: 'event.type ==' } });
    expect(
      store
        .get()
        .problems.map((p) => p.text)
        .join(' '),
    ).toContain('exit.condition');
    store.setExtras({ exit: undefined });
    expect(store.get().extras).toEqual({});
    store.undo();
    expect(store.get().extras).toEqual({});
    expect(store.get().canUndo).toBe(false);
  });
});

describe('unsaved changes, compared with the saved document', () => {
  it('is saved again once every edit is undone, and says when undo goes back past a save', () => {
    const { nodes, edges } = definitionToGraph(BRANCHY, null);
    const store = new EditorStore(nodes, edges, { name: 'Branchy' });
    expect(store.get().dirty).toBe(false);
    store.updateData('step-left', { label: 'Left' }, 'label');
    store.setName('Branchy!');
    expect(store.get().dirty).toBe(true);
    store.setName('Branchy');
    store.undo();
    expect(store.get().dirty).toBe(false);
    expect(store.get().canUndo).toBe(false);
    store.redo();
    expect(store.get().dirty).toBe(true);

    // saved with the label: undoing the label goes back past the save, and the canvas then differs from it
    store.markSaved();
    expect(store.get().dirty).toBe(false);
    expect(store.get().undoCrossesSave).toBe(true);
    store.select('step-middle');
    store.deleteSelected();
    expect(store.get().dirty).toBe(true);
    expect(store.get().undoCrossesSave).toBe(false);
    store.undo();
    expect(store.get().dirty).toBe(false);
    expect(store.get().undone).toBe('Undone: delete step “middle”');
    store.undo();
    expect(store.get().dirty).toBe(true);
    expect(store.get().undone).toBe('Undone: change the label of step “left” (made before the last save: Save to keep the canvas as it is now)');
    store.redo();
    expect(store.get().dirty).toBe(false);
  });
});

describe('placing new steps', () => {
  it('never puts a step on another: "+" twice under one branch, and a paste', () => {
    const { nodes, edges } = definitionToGraph(
      {
        steps: [
          {
            name: 'choose',
            kind: 'branch',
            branches: [
              { condition: 'true', next: '' },
              { condition: 'true', next: '' },
            ],
          },
        ],
      },
      { positions: { choose: { x: 0, y: 0 } }, labels: {} },
    );
    const store = new EditorStore(nodes, edges);
    store.addAfter('exit', 'step-choose', 'branch-0');
    store.addAfter('exit', 'step-choose', 'branch-1');
    store.select(store.get().nodes[1].id);
    store.copy();
    store.paste();
    const placed = store.get().nodes.map((n) => ({ x: n.position.x, y: n.position.y }));
    for (let i = 0; i < placed.length; i++) {
      for (let j = i + 1; j < placed.length; j++) {
        const apart = Math.abs(placed[i].x - placed[j].x) >= 220 || Math.abs(placed[i].y - placed[j].y) >= 96;
        expect(apart, `steps ${i} and ${j} at ${JSON.stringify([placed[i], placed[j]])}`).toBe(true);
      }
    }
    expect(freeSpot([], { x: 5, y: 7 })).toEqual({ x: 5, y: 7 });
  });

  it("auto-layout puts a branch's targets left to right in the order of its outputs", () => {
    const { nodes, edges } = definitionToGraph(BRANCHY, { positions: {}, labels: {} });
    const placed = layout(nodes, edges);
    const x = (name: string) => placed.find((n) => n.data.name === name)!.position.x;
    expect(x('left')).toBeLessThan(x('middle'));
    expect(x('middle')).toBeLessThan(x('right'));
  });

  it('keeps step labels in the draft, never in the definition', () => {
    const { nodes, edges } = definitionToGraph(BRANCHY, { positions: {}, labels: { choose: 'Bought or opened?' } });
    expect(nodes[0].data.label).toBe('Bought or opened?');
    const back = graphToDefinition(nodes, edges);
    expect(back.draft.labels).toEqual({ choose: 'Bought or opened?' });
    expect(JSON.stringify(back.definition)).not.toContain('Bought');
    const noted = definitionToGraph(BRANCHY, { positions: {}, labels: {}, notes: { left: 'Owned by Sam' } });
    const draft = graphToDefinition(noted.nodes, noted.edges).draft;
    expect(WorkflowDraft.parse(draft).notes).toEqual({ left: 'Owned by Sam' });
    expect(JSON.stringify(graphToDefinition(noted.nodes, noted.edges).definition)).not.toContain('Sam');
  });
});

describe('shares', () => {
  it('shows a few users of many as "<0.1%", never "0%"', () => {
    expect(formatShare(292, 1_000_000)).toBe('<0.1%');
    expect(formatShare(0, 1_000_000)).toBe('0%');
    expect(formatShare(3, 10)).toBe('30%');
  });
});
