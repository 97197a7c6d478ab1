'use client';
import { useSyncExternalStore } from 'react';
import type { Step } from '../../core/model/workflow';

// What the counts chart draws besides its data: time ticks whose labels never repeat, colours that read on the
// light and the dark background, and which series it starts with.

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** Tick spacings, finest first: each is a whole number of the unit its label shows (seconds, minutes, days). */
const TICK_STEPS = [
  ...[1, 5, 10, 15, 30].map((n) => n * SECOND),
  ...[1, 2, 5, 10, 15, 30].map((n) => n * MINUTE),
  ...[1, 2, 3, 6, 12].map((n) => n * HOUR),
  ...[1, 2, 7, 14, 30].map((n) => n * DAY),
];

export type TimeTicks = { ticks: number[]; label: (at: number) => string };

/**
 * Ticks over [from, to] at the finest spacing of at least `finest` that gives at most `most` of them, each labelled to
 * the spacing's unit (HH:MM:SS under a minute, HH:MM under a day, else the date): a label shows a tick's own
 * second, minute or day, so no two read the same, where the axis's own ticks every few seconds all read "07:50".
 */
export function timeTicks(from: number, to: number, finest: number, most = 7): TimeTicks {
  const spacings = TICK_STEPS.filter((step) => step >= finest);
  const spacing = spacings.find((step) => Math.floor(to / step) - Math.ceil(from / step) + 1 <= most) ?? spacings[spacings.length - 1];
  const ticks: number[] = [];
  for (let at = Math.ceil(from / spacing) * spacing; at <= to; at += spacing) ticks.push(at);
  if (ticks.length === 0) ticks.push(from);
  const options: Intl.DateTimeFormatOptions =
    spacing < MINUTE
      ? { hour: '2-digit', minute: '2-digit', second: '2-digit' }
      : spacing < DAY
        ? { hour: '2-digit', minute: '2-digit', ...(to - from >= DAY ? { month: 'short', day: 'numeric' } : {}) }
        : { month: 'short', day: 'numeric' };
  return { ticks, label: (at) => new Date(at).toLocaleString(undefined, options) };
}

/** The finest tick spacing for a resolution: a minute's samples (and the live point between them) may show seconds. */
export const FINEST_TICK = { minute: SECOND, hour: HOUR, day: DAY } as const;

/** The steps a user leaves the journey from (a direct or parallel step without `next`). */
export function exitSteps(steps: Step[]): string[] {
  return steps.filter((step) => (step.kind === 'direct' || step.kind === 'parallel') && step.next === undefined).map((step) => step.name);
}

export type ChartColors = { lines: string[]; conversion: string; text: string; grid: string };

// 600s on white, 400s on the dark surface: each line 3:1 or more against its background (WCAG non-text contrast).
const LIGHT: ChartColors = {
  lines: ['#2563eb', '#16a34a', '#d97706', '#9333ea', '#dc2626', '#0891b2', '#4b5563'],
  conversion: '#1d2330',
  text: '#596072',
  grid: '#e3e6ee',
};
const DARK: ChartColors = {
  lines: ['#60a5fa', '#4ade80', '#fbbf24', '#c084fc', '#f87171', '#22d3ee', '#9ca3af'],
  conversion: '#e6e8ef',
  text: '#a2a9b8',
  grid: '#2e3444',
};

const DARK_QUERY = '(prefers-color-scheme: dark)';

function onSchemeChange(notify: () => void): () => void {
  const query = window.matchMedia(DARK_QUERY);
  query.addEventListener('change', notify);
  return () => query.removeEventListener('change', notify);
}

/**
 * The chart's colours for the colour scheme the page follows now (globals.css: dark follows the system), kept in step
 * when it changes: SVG stroke attributes take no CSS variables.
 */
export function useChartColors(): ChartColors {
  const dark = useSyncExternalStore(
    onSchemeChange,
    () => window.matchMedia(DARK_QUERY).matches,
    () => false,
  );
  return dark ? DARK : LIGHT;
}
