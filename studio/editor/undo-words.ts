// What an undo step did, in the marketer's words, for the Undo and Redo buttons ("Undo: delete step “welcome”").
// Each edit of the store names itself when it records its undo step; a field edit is named by the inspector's field.

const FIELD_WORDS: Record<string, string> = {
  label: 'label',
  note: 'note',
  enterAction: 'on-enter action',
  leaveAction: 'on-leave action',
  ttl: 'idle re-evaluation',
  after: 'wait',
  cron: 'schedule',
  tz: 'time zone',
  tzFromProfile: 'time zone',
  condition: 'condition',
  actions: 'actions',
  branches: 'branches',
  paths: 'paths',
  timeout: 'timeout',
  'timeout-remove': 'timeout',
};

const quoted = (name: string) => `“${name}”`;

/** The words for an inspector edit of `field` (the store's undo key) on the step named `step`. */
export function fieldEditWords(field: string, step: string): string {
  if (field === 'name') return `rename step ${quoted(step)}`;
  const branch = /^(branch|path)-(\d+)(-label)?$/.exec(field);
  const what = branch
    ? `${branch[3] ? 'name of ' : ''}${branch[1]} ${Number(branch[2]) + 1}`
    : field.endsWith(' rules')
      ? 'condition'
      : (FIELD_WORDS[field] ?? 'settings');
  return `change the ${what} of step ${quoted(step)}`;
}

/** "step “a”", "2 steps". */
export function stepsWords(names: string[]): string {
  return names.length === 1 ? `step ${quoted(names[0])}` : `${names.length} steps`;
}

export { quoted };
