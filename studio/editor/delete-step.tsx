'use client';
import { createContext, useCallback, useContext, useEffect, useId, useRef, useState, type ReactNode } from 'react';
import { formatCount } from '../ui';
import { useCounts } from './context';
import { useEditorStore } from './store';

// Deleting the entry step, or a step that holds users of the running instance, is asked first: one stray key must
// not silently move a journey's start or strand a million users. Other steps go at once (Undo brings them back).

/** A step about to be deleted that is worth a question: the entry, or one holding users now. */
type Risk = { name: string; users: number; entry: boolean };
type Question = { steps: string[]; risks: Risk[]; nextEntry: string | undefined };

const RequestDelete = createContext<() => void>(() => {});

/** Deletes the selected steps, asking first when one of them is the entry step or holds users. */
export const useDeleteSteps = () => useContext(RequestDelete);

export function StepDeletion({ children }: { children: ReactNode }) {
  const store = useEditorStore();
  const counts = useCounts();
  const [question, setQuestion] = useState<Question | null>(null);
  const request = useCallback(() => {
    const { nodes } = store.get();
    const doomed = store.selectedSteps();
    const risks = doomed
      .map((n) => ({ name: n.data.name, users: counts?.steps[n.data.name] ?? 0, entry: n.id === nodes[0]?.id }))
      .filter((r) => r.entry || r.users > 0);
    if (risks.length === 0) return store.deleteSelected();
    setQuestion({ steps: doomed.map((n) => n.data.name), risks, nextEntry: nodes.find((n) => !doomed.includes(n))?.data.name });
  }, [store, counts]);
  return (
    <RequestDelete.Provider value={request}>
      {children}
      {question && (
        <ConfirmDelete
          question={question}
          onCancel={() => setQuestion(null)}
          onConfirm={() => {
            setQuestion(null);
            store.deleteSelected();
          }}
        />
      )}
    </RequestDelete.Provider>
  );
}

function riskText({ name, users, entry }: Risk): string {
  const facts = [entry ? 'is the entry step' : '', users > 0 ? `holds ${formatCount(users)} user${users === 1 ? '' : 's'} now` : ''];
  return `“${name}” ${facts.filter(Boolean).join(' and ')}.`;
}

/** Enter (the confirm button has the focus) deletes; Escape or "Keep" cancels and gives the focus back to where it was. */
function ConfirmDelete({ question, onCancel, onConfirm }: { question: Question; onCancel: () => void; onConfirm: () => void }) {
  const ref = useRef<HTMLDialogElement>(null);
  const confirm = useRef<HTMLButtonElement>(null);
  const titleId = useId();
  useEffect(() => {
    const opener = document.activeElement;
    if (ref.current && !ref.current.open) ref.current.showModal();
    confirm.current?.focus();
    return () => {
      if (opener instanceof HTMLElement && opener.isConnected) opener.focus();
    };
  }, []);
  const { steps, risks, nextEntry } = question;
  const entry = risks.some((r) => r.entry);
  const users = risks.some((r) => r.users > 0);
  return (
    <dialog ref={ref} className="dialog" role="alertdialog" aria-labelledby={titleId} onClose={onCancel} data-testid="delete-dialog">
      <header>
        <h2 id={titleId}>{steps.length === 1 ? `Delete step “${steps[0]}”?` : `Delete ${steps.length} steps?`}</h2>
      </header>
      <div className="dialog-body">
        {risks.map((r) => (
          <p key={r.name} data-testid="delete-risk">
            <strong>{riskText(r)}</strong>
          </p>
        ))}
        {entry && nextEntry && <p>“{nextEntry}” would become the entry step, where users start.</p>}
        <p className="muted small">
          {users ? 'Users in a deleted step stay where they are until this version is saved and applied, which asks where they go. ' : ''}
          Undo (Ctrl+Z) brings a deleted step back.
        </p>
        <div className="row">
          <button type="button" onClick={onCancel} data-testid="delete-cancel">
            Keep {steps.length === 1 ? 'the step' : 'them'}
          </button>
          <button type="button" ref={confirm} className="danger" onClick={onConfirm} data-testid="delete-confirm">
            Delete {steps.length === 1 ? 'step' : `${steps.length} steps`}
          </button>
        </div>
      </div>
    </dialog>
  );
}
