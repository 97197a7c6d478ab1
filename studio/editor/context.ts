'use client';
import { createContext, useContext } from 'react';
import type { WorkflowProblem } from '../../core/model/workflow';
import type { Counts } from '../model';
import { useQuery } from '../query';

/** What canvas components need to know about where they are; counts come from the query under `countsKey`. */
export type CanvasInfo = {
  tenant: string;
  workflowId: string;
  /** The instance whose counts are shown (running, or a stopped one in the history view). */
  instanceId: string | null;
  /** Query key the counts live under: live SSE counts or a history snapshot. */
  countsKey: string | null;
  /** True for the history view: the graph is shown, not edited. */
  readOnly: boolean;
  /** Steps may be exported and searched only while an instance runs. */
  live: boolean;
  /** What the saved version allows but will not work yet (e.g. inCrowd of a crowd the tenant lacks), shown on its step. */
  warnings: WorkflowProblem[];
};

export const CanvasContext = createContext<CanvasInfo>({
  tenant: '',
  workflowId: '',
  instanceId: null,
  countsKey: null,
  readOnly: false,
  live: false,
  warnings: [],
});

export const useCanvasInfo = () => useContext(CanvasContext);

export const liveCountsKey = (tenant: string, workflowId: string) => `counts:${tenant}:${workflowId}`;

/** The counts shown on the graph (never copied into node data). */
export function useCounts(): Counts | undefined {
  return useQuery<Counts>(useCanvasInfo().countsKey).data;
}
