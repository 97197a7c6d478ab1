'use client';
import { useEffect, useRef } from 'react';
import { useDeleteSteps } from './delete-step';
import { useReveal } from './reveal';
import { useEditorStore } from './store';

// The canvas's keyboard: undo/redo, copy/paste, and Delete/Backspace for the selected steps. Delete and Backspace
// are typing keys first: they act on the canvas only while the marketer is on the canvas, never when a form control
// has (or just had) the focus: a control that is re-rendered away, or a click on a button that removes itself,
// leaves the focus on <body>, and the next Backspace meant for a typo must not delete the selected step.

/** Elements whose keys are theirs: text boxes, lists, buttons, links, menus, and anything in a dialog. */
const CONTROLS = 'input, textarea, select, button, a, [contenteditable=""], [contenteditable="true"], [role=menu], dialog';

function isTyping(element: Element): boolean {
  return (element as HTMLElement).isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(element.tagName);
}

/** True when `element` is the canvas itself or a step on it, not a control inside one (a step's menu). */
function onCanvas(element: Element | null): boolean {
  return !!element?.isConnected && !!element.closest('.editor-canvas') && !element.closest(CONTROLS);
}

/**
 * Delete/Backspace belong to the canvas when the key's target is on the canvas, or when the focus is nowhere (body)
 * and the marketer's last focus or press was on the canvas (a click on the pane focuses nothing).
 */
export function deleteKeyIsForCanvas(target: Element, last: Element | null): boolean {
  if (onCanvas(target)) return true;
  return (target === document.body || target === document.documentElement) && onCanvas(last);
}

export function useCanvasKeys(readOnly: boolean) {
  const store = useEditorStore();
  const reveal = useReveal();
  const requestDelete = useDeleteSteps();
  // the element of the last focus or pointer press, wherever it was (a control that then left the page included)
  const last = useRef<Element | null>(null);

  useEffect(() => {
    const remember = (event: Event) => {
      last.current = event.target instanceof Element ? event.target : null;
    };
    document.addEventListener('focusin', remember, true);
    document.addEventListener('pointerdown', remember, true);
    return () => {
      document.removeEventListener('focusin', remember, true);
      document.removeEventListener('pointerdown', remember, true);
    };
  }, []);

  useEffect(() => {
    if (readOnly) return;
    const onKey = (event: KeyboardEvent) => {
      const target = event.target instanceof Element ? event.target : document.body;
      if (isTyping(target) || target.closest('dialog')) return;
      const mod = event.metaKey || event.ctrlKey;
      const key = event.key.toLowerCase();
      if (mod && key === 'z') store[event.shiftKey ? 'redo' : 'undo']();
      else if (mod && key === 'y') store.redo();
      else if (mod && key === 'c') store.copy();
      else if (mod && key === 'v') {
        store.paste();
        const pasted = store.get().nodes.find((n) => n.id === store.get().selectedId);
        if (pasted) reveal(pasted.position);
      } else if (event.key === 'Delete' || event.key === 'Backspace') {
        if (!deleteKeyIsForCanvas(target, last.current)) return;
        requestDelete();
      } else return;
      event.preventDefault();
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [store, readOnly, reveal, requestDelete]);
}
