import type { FitViewOptions } from '@xyflow/react';

// Fitting the journey into the canvas so that no step ends up under the minimap. The minimap sits in the canvas's
// bottom-right corner; a fit keeps the strip it stands in free of steps (the journey is centred in what is left).
// On a narrow canvas (a 1024 px window, palette and inspector open) that strip would cost too much room, so there
// the minimap is not shown at all.

export const MINIMAP_SIZE = { width: 160, height: 110 };
/** The narrowest canvas (px) that shows the minimap. */
export const MINIMAP_MIN_CANVAS_WIDTH = 760;
/** React Flow's panel margin around the minimap, and room to spare beside it (px). */
const MINIMAP_CLEARANCE = 15 + 16;
const EDGE = '24px';

/**
 * The smallest zoom a fit may choose: React Flow's default (0.5) left the demo journey's last steps below a 1024×700
 * window; the whole journey in view comes first, and the zoom buttons bring its words back to 100%.
 */
export const MIN_ZOOM = 0.2;

export const showsMinimap = (canvasWidth: number) => canvasWidth >= MINIMAP_MIN_CANVAS_WIDTH;

/** Fit options for a canvas of this width: every step in view, never zoomed past 100%, the minimap's strip kept clear. */
export function fitOptions(canvasWidth: number): FitViewOptions {
  const right = showsMinimap(canvasWidth) ? `${MINIMAP_SIZE.width + MINIMAP_CLEARANCE}px` : EDGE;
  return { maxZoom: 1, minZoom: MIN_ZOOM, padding: { top: EDGE, bottom: EDGE, left: EDGE, right: right as `${number}px` } };
}

/** The fit options of the editor's canvas as it is on the page now (for a fit asked for outside it: auto-layout). */
export function currentFitOptions(): FitViewOptions {
  return fitOptions(document.querySelector('.editor-canvas')?.clientWidth ?? 0);
}
