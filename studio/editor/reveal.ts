'use client';
import { useReactFlow, type XYPosition } from '@xyflow/react';
import { useCallback } from 'react';
import { NODE_HEIGHT, NODE_WIDTH } from '../convert';

const MARGIN = 40;

/** Pans (never zooms) so a step just placed at `position` is on screen: a new step in free space may be out of view. */
export function useReveal() {
  const { flowToScreenPosition, setCenter, getZoom } = useReactFlow();
  return useCallback(
    (position: XYPosition) => {
      const pane = document.querySelector('.editor-canvas')?.getBoundingClientRect();
      if (!pane) return;
      const topLeft = flowToScreenPosition(position);
      const bottomRight = flowToScreenPosition({ x: position.x + NODE_WIDTH, y: position.y + NODE_HEIGHT });
      const inside =
        topLeft.x >= pane.left + MARGIN && topLeft.y >= pane.top + MARGIN && bottomRight.x <= pane.right - MARGIN && bottomRight.y <= pane.bottom - MARGIN;
      if (!inside) void setCenter(position.x + NODE_WIDTH / 2, position.y + NODE_HEIGHT / 2, { zoom: getZoom(), duration: 200 });
    },
    [flowToScreenPosition, setCenter, getZoom],
  );
}
