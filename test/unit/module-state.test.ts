import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { importsOf, root, sourceFiles } from '../helpers/import-graph';

// Issue 35 §1: no module-level mutable state outside what a thread's composition root owns (server/app.ts, AppState).
// Such state outlives the app that filled it, is shared by every app a thread builds (tests build many) and cannot be
// seen from the root. This reads the top level of every file of the server side (app/, server/, core/) as TypeScript
// and finds what can hold state: a `let` or `var`, a Map/Set/WeakMap/WeakSet not typed ReadonlyMap/ReadonlySet, a
// static field that is not readonly. Each that stays is listed below with why; a new one fails naming its file.

const PURE_MEMO = 'a bounded memo of a pure function: the same key always gives the same value, so no app can tell it is shared';
const WORKER_ENTRY = "a worker thread's entry file is that thread's composition root: its top level lives and ends with the thread";

const ALLOWED: { where: string; why: string }[] = [
  {
    where: 'core/conditions/environment.ts membership',
    why: 'set and restored around one synchronous CEL call (cel-js hands its functions their arguments only); null between calls',
  },
  { where: 'core/conditions/gate.ts checks', why: `${PURE_MEMO} (a condition text and rule set → its check, at most 1,000 each)` },
  { where: 'core/conditions/regex.ts compiled', why: `${PURE_MEMO} (a pattern → its RE2 program, at most 1,000)` },
  { where: 'core/model/cron.ts knownSpans', why: `${PURE_MEMO} (a zone and cron → spans between firings, cleared past 10,000)` },
  { where: 'core/model/cron.ts knownZones', why: `${PURE_MEMO} (a zone name → whether it is one, cleared past 10,000)` },
  { where: 'core/model/quiet-hours.ts formatters', why: `${PURE_MEMO} (a zone → its Intl formatter, cleared past 1,000)` },
  { where: 'server/conditions/compile.ts compiledByText', why: `${PURE_MEMO} (a checked text → its frozen compiled condition, at most 10,000)` },
  { where: 'server/conditions/profile-predicate.ts keysByText', why: `${PURE_MEMO} (a condition text → the attributes it reads, cleared past 10,000)` },
  { where: 'server/engine/holdout-bitmap.ts bitmapsOf', why: `${PURE_MEMO} (a holdout plan → its mask bitmaps, the 4 last used; evicted ones freed)` },
  { where: 'server/engine/thread.ts imports', why: `${WORKER_ENTRY} (beside the app it builds and registers)` },
  { where: 'server/exports/table-thread.ts writers', why: WORKER_ENTRY },
  { where: 'server/storage/profile-rows.ts sqliteInserts', why: `${PURE_MEMO} (a table and row count → the upsert's SQL text, rows ≤ a statement's)` },
  {
    where: 'server/profiles/zones.ts zonedUsers',
    why: "weakly keyed by a field of a profile index, which one app's state owns: the entry goes with the field and no other app reaches it",
  },
];

/** What a worker entry's allowance assumes: nothing imports its values, so its top level runs only in its own thread. */
const WORKER_ENTRIES = ALLOWED.filter((entry) => entry.why.startsWith(WORKER_ENTRY)).map((entry) => entry.where.split(' ')[0]);

const MUTABLE_COLLECTIONS: ReadonlySet<string> = new Set(['Map', 'Set', 'WeakMap', 'WeakSet']);
const READONLY_TYPES: ReadonlySet<string> = new Set(['ReadonlyMap', 'ReadonlySet']);

/** The names at the top level of `text` that can hold state, as `file name` (a static field as `Class.field`), with their lines. */
function moduleState(file: string, text: string): { where: string; line: number }[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: { where: string; line: number }[] = [];
  const add = (name: string, node: ts.Node) => found.push({ where: `${file} ${name}`, line: source.getLineAndCharacterOfPosition(node.getStart()).line + 1 });
  for (const statement of source.statements) {
    if (ts.isVariableStatement(statement)) {
      const constant = (statement.declarationList.flags & ts.NodeFlags.Const) !== 0;
      for (const declaration of statement.declarationList.declarations)
        if (!constant || holdsMutableCollection(declaration)) add(declaration.name.getText(source), declaration);
    } else if (ts.isClassDeclaration(statement)) {
      for (const member of statement.members) {
        const modifiers = ts.canHaveModifiers(member) ? (ts.getModifiers(member) ?? []) : [];
        const is = (kind: ts.SyntaxKind) => modifiers.some((modifier) => modifier.kind === kind);
        if (ts.isPropertyDeclaration(member) && is(ts.SyntaxKind.StaticKeyword) && !is(ts.SyntaxKind.ReadonlyKeyword))
          add(`${statement.name?.text}.${member.name.getText(source)}`, member);
      }
    }
  }
  return found;
}

function holdsMutableCollection(declaration: ts.VariableDeclaration): boolean {
  if (declaration.initializer && buildsObjectsInLiteral(declaration.initializer)) return true;
  let value = declaration.initializer;
  while (value && (ts.isAsExpression(value) || ts.isSatisfiesExpression(value) || ts.isParenthesizedExpression(value))) value = value.expression;
  if (!value || !ts.isNewExpression(value) || !ts.isIdentifier(value.expression) || !MUTABLE_COLLECTIONS.has(value.expression.text)) return false;
  const type = declaration.type;
  return !(type && ts.isTypeReferenceNode(type) && ts.isIdentifier(type.typeName) && READONLY_TYPES.has(type.typeName.text));
}

/** Whether a `new` stands inside an object or array literal of `initializer` (outside functions): `{ pool: new Agent() }`. */
function buildsObjectsInLiteral(initializer: ts.Expression): boolean {
  const visit = (node: ts.Node, inLiteral: boolean): boolean => {
    if (ts.isFunctionLike(node)) return false;
    if (inLiteral && ts.isNewExpression(node)) return true;
    const literal = inLiteral || ts.isObjectLiteralExpression(node) || ts.isArrayLiteralExpression(node);
    return ts.forEachChild(node, (child) => visit(child, literal) || undefined) ?? false;
  };
  return visit(initializer, false);
}

const found = ['app', 'server', 'core'].flatMap(sourceFiles).flatMap((file) => moduleState(file, readFileSync(join(root, file), 'utf8')));

describe('module-level state', () => {
  it('is none outside the apps but the listed', () => {
    const allowed = new Set(ALLOWED.map((entry) => entry.where));
    expect(found.filter((state) => !allowed.has(state.where)).map((state) => `${state.where} (line ${state.line})`)).toEqual([]);
  });

  it('is listed only while it is there (remove a gone entry from ALLOWED)', () => {
    expect(ALLOWED.map((entry) => entry.where).filter((where) => !found.some((state) => state.where === where))).toEqual([]);
  });

  it('is allowed in a worker entry only while no file imports its values', () => {
    const importers = ['app', 'server', 'core']
      .flatMap(sourceFiles)
      .flatMap(importsOf)
      .filter((i) => !i.typeOnly && WORKER_ENTRIES.includes(i.spec));
    expect(WORKER_ENTRIES).toHaveLength(2);
    expect(importers.map((i) => `${i.from} → ${i.spec}`)).toEqual([]);
  });

  it('is found the way the checks above assume', () => {
    const text = `
      let counter = 0;
      export var legacy = 1;
      const cache = new Map<string, number>();
      const owners = new WeakMap() as WeakMap<object, string>;
      const NAMES: ReadonlySet<string> = new Set(['a']);
      const LIMIT = 10;
      class Registry { static entries = new Map(); static readonly KIND = 'k'; private local = 1; }
      function inside() { let local = 0; const seen = new Set(); return { local, seen }; }
      const worker = \`let insideAString = 1;\`;
      const pools = { checked: new Agent({ keepAlive: true }) };
      const FIELDS = ['a', 'b'];
      const make = { pool: () => new Agent() };`;
    expect(moduleState('x.ts', text).map((state) => state.where)).toEqual([
      'x.ts counter',
      'x.ts legacy',
      'x.ts cache',
      'x.ts owners',
      'x.ts Registry.entries',
      'x.ts pools',
    ]);
  });
});
