import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

// Every relative link of the README and the docs/ pages leads somewhere: the file exists and, for a link with a
// #fragment into a markdown page, that page has a heading of that anchor (GitHub's slugs). The README sends readers to
// these pages, so a page renamed or a heading reworded must not leave a link dangling.
const root = resolve(__dirname, '../..');

function markdownPages(): string[] {
  const docs = join(root, 'docs');
  return [
    'README.md',
    ...readdirSync(docs)
      .filter((name) => name.endsWith('.md'))
      .map((name) => join('docs', name)),
  ];
}

/** The text outside fenced code blocks. */
function unfenced(text: string): string {
  return text.replace(/^```[\s\S]*?^```/gm, '');
}

/** The text outside code, where a `[x](y)` is a link. */
function prose(text: string): string {
  return unfenced(text).replace(/`[^`\n]*`/g, '');
}

/** GitHub's heading anchor: lower case, punctuation dropped except - and _, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  for (const [, heading] of unfenced(text).matchAll(/^#{1,6}\s+(.+)$/gm)) {
    const base = slug(heading.replace(/`/g, ''));
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    result.add(count === 0 ? base : `${base}-${count}`);
  }
  return result;
}

function brokenLinks(page: string, text = readFileSync(join(root, page), 'utf8')): string[] {
  const broken: string[] = [];
  for (const [, target] of prose(text).matchAll(/\]\(([^)\s]+)\)/g)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto: …
    const [path, fragment] = target.split('#', 2);
    const file = path ? resolve(dirname(join(root, page)), path) : join(root, page);
    if (!existsSync(file)) {
      broken.push(`${target}: no ${relative(root, file)}`);
      continue;
    }
    if (fragment && statSync(file).isFile() && file.endsWith('.md') && !anchors(readFileSync(file, 'utf8')).has(fragment))
      broken.push(`${target}: no heading #${fragment} in ${relative(root, file)}`);
  }
  return broken;
}

describe('documentation links', () => {
  it('finds the pages and their headings', () => {
    expect(markdownPages()).toContain('README.md');
    expect(slug('Sending events safely (retries, duplicates)')).toBe('sending-events-safely-retries-duplicates');
    expect(anchors('# A\n```\n# not a heading\n```\n## B `c`\n## B c')).toEqual(new Set(['a', 'b-c', 'b-c-1']));
    // A page written with a missing file and a missing heading is caught on both.
    expect(brokenLinks('docs/x.md', '[a](../README.md) [b](nowhere.md) [c](../README.md#no-such-heading) [d](https://x.y/z)')).toEqual([
      'nowhere.md: no docs/nowhere.md',
      '../README.md#no-such-heading: no heading #no-such-heading in README.md',
    ]);
  });

  it.each(markdownPages())('every relative link of %s resolves', (page) => {
    expect(brokenLinks(page)).toEqual([]);
  });
});
