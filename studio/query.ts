'use client';
import { useCallback, useEffect, useSyncExternalStore } from 'react';
import { ApiError } from './api';

// A small keyed query cache (the react-query idea, in the size this studio needs): components read
// server data through useQuery(key) and writers invalidate or set a key; nothing is copied into
// component state, so every reader of a key sees the same, latest value.

export type QueryState<T> = { data?: T; error?: ApiError; loading: boolean };

type Entry = { state: QueryState<unknown>; fetcher?: () => Promise<unknown>; inFlight?: Promise<void>; refetchAfter?: boolean; listeners: Set<() => void> };

const cache = new Map<string, Entry>();
const EMPTY: QueryState<never> = { loading: true };

function entry(key: string): Entry {
  let found = cache.get(key);
  if (!found) {
    found = { state: EMPTY, listeners: new Set() };
    cache.set(key, found);
  }
  return found;
}

function publish(key: string, state: QueryState<unknown>) {
  const target = entry(key);
  target.state = state;
  for (const listener of target.listeners) listener();
}

/** Fetches a key; `fresh` (an invalidation) means a fetch already in flight started too early and must be repeated. */
async function run(key: string, fresh = false): Promise<void> {
  const target = entry(key);
  if (!target.fetcher) return;
  if (target.inFlight) {
    if (!fresh) return target.inFlight;
    target.refetchAfter = true;
    // the repeat starts in the in-flight fetch's `finally`; wait for that one too
    return target.inFlight.then(() => target.inFlight);
  }
  publish(key, { ...target.state, loading: true });
  target.inFlight = target
    .fetcher()
    .then(
      (data) => publish(key, { data, loading: false }),
      (error: unknown) =>
        publish(key, { data: target.state.data, loading: false, error: error instanceof ApiError ? error : new ApiError(0, 'client', String(error)) }),
    )
    .finally(() => {
      target.inFlight = undefined;
      if (target.refetchAfter) {
        target.refetchAfter = false;
        void run(key);
      }
    });
  return target.inFlight;
}

/** Re-fetches every mounted query whose key starts with `prefix`. */
export function invalidate(prefix: string): Promise<void[]> {
  return Promise.all([...cache.entries()].filter(([key, e]) => key.startsWith(prefix) && e.listeners.size > 0).map(([key]) => run(key, true)));
}

/** Writes a value into the cache (used for pushed data such as SSE counts). */
export function setQueryData<T>(key: string, data: T) {
  publish(key, { data, loading: false });
}

/** Forgets every cached value (sign-in and sign-out: what one session saw is not another's). */
export function resetQueries() {
  for (const [key, e] of cache) {
    if (e.listeners.size === 0) cache.delete(key);
    else publish(key, EMPTY);
  }
}

export function useQuery<T>(
  key: string | null,
  fetcher?: () => Promise<T>,
  options: { refetchMs?: number } = {},
): QueryState<T> & { refetch: () => Promise<void> } {
  const subscribe = useCallback(
    (listener: () => void) => {
      if (!key) return () => {};
      const target = entry(key);
      target.listeners.add(listener);
      return () => target.listeners.delete(listener);
    },
    [key],
  );
  const state = useSyncExternalStore(
    subscribe,
    () => (key ? entry(key).state : EMPTY),
    () => EMPTY,
  ) as QueryState<T>;

  useEffect(() => {
    if (!key || !fetcher) return;
    entry(key).fetcher = fetcher;
    void run(key);
    if (!options.refetchMs) return;
    const timer = setInterval(() => void run(key), options.refetchMs);
    return () => clearInterval(timer);
    // the fetcher is identified by its key; a new closure for the same key fetches the same thing
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [key, options.refetchMs]);

  const refetch = useCallback(() => (key ? run(key) : Promise.resolve()), [key]);
  return { ...state, refetch };
}
