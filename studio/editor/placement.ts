import type { XYPosition } from '@xyflow/react';
import { NODE_HEIGHT, NODE_WIDTH, type StepNode } from '../convert';

// Where a new step goes: where it was asked for if that spot is free, else the free spot nearest to it
// (searched on a 20 px grid, nearest first). "+" twice under one branch, Enter in the palette or a paste
// never stack steps on top of each other.

const GAP = 30;
const GRID = 20;
const REACH = 60; // grid cells searched each way: ±1200 px

type Box = { x: number; y: number; width: number; height: number };

const boxOf = (node: StepNode): Box => ({
  x: node.position.x,
  y: node.position.y,
  width: node.measured?.width ?? NODE_WIDTH,
  height: node.measured?.height ?? NODE_HEIGHT,
});

/** Closer than GAP counts as overlapping: steps need room for their edges and "+" buttons. */
function overlaps(a: Box, b: Box): boolean {
  return a.x < b.x + b.width + GAP && b.x < a.x + a.width + GAP && a.y < b.y + b.height + GAP && b.y < a.y + a.height + GAP;
}

/** Grid offsets ordered by distance, computed once. */
const OFFSETS = (() => {
  const offsets: [number, number][] = [];
  for (let dx = -REACH; dx <= REACH; dx++) for (let dy = -REACH; dy <= REACH; dy++) offsets.push([dx * GRID, dy * GRID]);
  return offsets.sort((a, b) => a[0] ** 2 + a[1] ** 2 - (b[0] ** 2 + b[1] ** 2));
})();

export function freeSpot(nodes: StepNode[], wanted: XYPosition, size = { width: NODE_WIDTH, height: NODE_HEIGHT }): XYPosition {
  const boxes = nodes.map(boxOf);
  for (const [dx, dy] of OFFSETS) {
    const spot = { x: Math.round(wanted.x + dx), y: Math.round(wanted.y + dy) };
    if (!boxes.some((box) => overlaps({ ...spot, ...size }, box))) return spot;
  }
  return wanted;
}

/** Room kept between a step and a step below it (px): an edge's turn and its label (condition and count) go there. */
export const ROOM_BELOW = 64;

const bottomOf = (box: Box) => box.y + box.height;
const sideBySide = (a: Box, b: Box) => a.x + a.width <= b.x || b.x + b.width <= a.x;

/**
 * Steps grow after they are placed (a count, a sparkline, a problems line appear), and a grown step would run into
 * the step below it and push that step's edge label onto it. Top to bottom, whenever a step lower down (under it, or
 * one of its targets) starts closer than ROOM_BELOW under its bottom, that step and everything at or below its top
 * move down by the shortfall, so ranks stay ranks and nothing moves sideways (what the marketer placed by hand
 * keeps its place otherwise). Returns the nodes unchanged (the same
 * array) when every step has its room.
 */
export function makeRoom(nodes: StepNode[], edges: { source: string; target: string }[]): StepNode[] {
  const boxes = new Map(nodes.map((node) => [node.id, boxOf(node)]));
  const targets = new Map<string, Set<string>>();
  for (const edge of edges) targets.set(edge.source, (targets.get(edge.source) ?? new Set()).add(edge.target));
  const order = [...nodes].sort((a, b) => boxes.get(a.id)!.y - boxes.get(b.id)!.y);
  let moved = false;
  for (const upper of order) {
    const above = boxes.get(upper.id)!;
    for (const lower of order) {
      const below = boxes.get(lower.id)!;
      // only steps whose top is under this one's top; beside it and not its target, a step needs no room
      if (lower === upper || below.y <= above.y) continue;
      // beside it, a step needs room only as its target lower down (a target level with it has its edge go sideways)
      if (sideBySide(above, below) && !(targets.get(upper.id)?.has(lower.id) && below.y >= above.y + above.height / 2)) continue;
      const shortfall = bottomOf(above) + ROOM_BELOW - below.y;
      if (shortfall <= 0) continue;
      const line = below.y;
      for (const box of boxes.values()) if (box.y >= line) box.y += shortfall;
      moved = true;
    }
  }
  if (!moved) return nodes;
  return nodes.map((node) => {
    const y = Math.round(boxes.get(node.id)!.y);
    return y === Math.round(node.position.y) ? node : { ...node, position: { ...node.position, y } };
  });
}
