'use client';
import type { ReactNode } from 'react';
import type { ApiError } from './api';
import { ListStates } from './ui';

// The one list table of the studio (workflows, crowds, procedures): loading, error and empty states, a
// header row, and one row per item. Pages say what their columns are; the table says how lists look.

export type Column<T> = { header: string; cell: (row: T) => ReactNode; className?: string };

type ListQuery<T> = { data?: T[]; error?: ApiError; loading: boolean; refetch: () => void };

export function ListTable<T>({
  query,
  what,
  empty,
  columns,
  rowKey,
  testId,
  rowTestId,
  rowProps,
}: {
  query: ListQuery<T>;
  what: string;
  empty: ReactNode;
  columns: Column<T>[];
  rowKey: (row: T) => string;
  testId: string;
  rowTestId: string;
  rowProps?: (row: T) => Record<string, string | boolean | undefined>;
}) {
  return (
    <>
      <ListStates query={query} what={what} empty={empty} />
      {query.data && query.data.length > 0 && (
        <table data-testid={testId}>
          <thead>
            <tr>
              {columns.map((column, i) => (
                <th key={i} scope="col">
                  {column.header || <span className="visually-hidden">Actions</span>}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {query.data.map((row) => (
              <tr key={rowKey(row)} data-testid={rowTestId} {...rowProps?.(row)}>
                {columns.map((column, i) => (
                  <td key={i} className={column.className}>
                    {column.cell(row)}
                  </td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}
