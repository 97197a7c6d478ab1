// How big an RE2 program a pattern becomes, from its text, without compiling it: RE2 runs in time input × program size,
// and a counted repetition makes the program much larger than the pattern (`.{1000}` is 7 characters, 1,002 instructions).

/** Above this many instructions a pattern is refused before it is compiled (compiling takes 2.5-12 µs an instruction here). */
export const MAX_REGEX_INSTRUCTIONS = 10_000;

type Frame = { total: number; branches: number; last: number; capture: boolean };

/**
 * An upper bound on the size of the RE2 program `pattern` compiles to, read from the pattern's text without compiling
 * it: one instruction per literal, class or assertion, one per `*`, `+`, `?` and `|`, two per capturing group, and a
 * counted repetition `x{n,m}` as RE2 expands it: m copies of x and m - n optional ones (`.{1000}` is 1,002
 * instructions in 7 characters, and `(?:.{30}){30}` 902). Malformed syntax is counted as literals; compiling says
 * what is wrong with it.
 */
export function regexProgramBound(pattern: string): number {
  const stack: Frame[] = [{ total: 0, branches: 1, last: 0, capture: false }];
  const add = (size: number) => {
    const frame = stack[stack.length - 1];
    frame.total += size;
    frame.last = size;
  };
  const repeat = (times: number, extra: number) => {
    const frame = stack[stack.length - 1];
    frame.total += frame.last * (times - 1) + extra;
    frame.last = frame.last * times + extra;
  };
  let i = 0;
  while (i < pattern.length) {
    const c = pattern[i];
    if (c === '\\') {
      if (pattern[i + 1] === 'Q') {
        const end = pattern.indexOf('\\E', i + 2);
        const literal = end < 0 ? pattern.length - i - 2 : end - i - 2;
        for (let k = 0; k < literal; k++) add(1);
        i = end < 0 ? pattern.length : end + 2;
        continue;
      }
      const braced = /^\\[pPx]\{[^}]*\}/.exec(pattern.slice(i, i + 64));
      i += braced ? braced[0].length : 2;
      add(1);
    } else if (c === '[') {
      i = classEnd(pattern, i);
      add(1);
    } else if (c === '(') {
      const flags = /^\(\?[a-zA-Z-]*\)/.exec(pattern.slice(i, i + 16));
      if (flags) {
        i += flags[0].length;
        continue;
      }
      const capture = pattern[i + 1] !== '?' || pattern[i + 2] === 'P' || pattern[i + 2] === '<';
      stack.push({ total: 0, branches: 1, last: 0, capture });
      i++;
    } else if (c === ')' && stack.length > 1) {
      const group = stack.pop()!;
      add(group.total + group.branches - 1 + (group.capture ? 2 : 0));
      i++;
    } else if (c === '|') {
      const frame = stack[stack.length - 1];
      frame.branches++;
      frame.last = 0;
      i++;
    } else if (c === '*' || c === '+' || c === '?') {
      repeat(1, 1);
      i++;
    } else if (c === '{') {
      const counted = /^\{(\d+)(,(\d*))?\}/.exec(pattern.slice(i, i + 24));
      if (!counted) {
        add(1);
        i++;
        continue;
      }
      const min = Number(counted[1]);
      const max = counted[2] === undefined ? min : counted[3] === '' ? min + 1 : Number(counted[3]);
      repeat(Math.max(1, max), Math.max(0, max - min));
      i += counted[0].length;
    } else {
      add(1);
      i++;
    }
  }
  while (stack.length > 1) {
    const group = stack.pop()!;
    add(group.total + group.branches - 1);
  }
  // The unanchored search loop, the fail and match instructions.
  return stack[0].total + stack[0].branches - 1 + 4;
}

/** The index after the character class opening at `start` (a `]` first in it is literal; `[:alpha:]` is one item). */
function classEnd(pattern: string, start: number): number {
  let i = start + 1;
  if (pattern[i] === '^') i++;
  if (pattern[i] === ']') i++;
  while (i < pattern.length && pattern[i] !== ']') {
    if (pattern[i] === '\\') i += 2;
    else if (pattern.startsWith('[:', i)) {
      const end = pattern.indexOf(':]', i + 2);
      i = end < 0 ? i + 1 : end + 2;
    } else i++;
  }
  return i + 1;
}

/** The most instructions one character of a pattern can become (`.{1,999}`: 8 characters, 1,999 instructions). */
export const MAX_INSTRUCTIONS_PER_PATTERN_CHAR = 250;
