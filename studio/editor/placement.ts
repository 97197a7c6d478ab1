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
