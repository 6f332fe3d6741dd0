import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../helpers/process.js';

/**
 * Reading the README and docs/ the way test/docs/docs.test.ts checks them: the pages, their
 * headings' anchors (GitHub's rule), their links, the routes they name and their curl examples.
 */

export interface Page {
  /** Path from the repository root, e.g. `docs/gate.md`. */
  path: string;
  text: string;
}

export function pages(): Page[] {
  const docs = readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`);
  return ['README.md', ...docs].map((path) => ({ path, text: readFileSync(join(ROOT, path), 'utf8') }));
}

/** The fenced code blocks of a page whose info string is `info` (`nginx`, `yaml`). */
export function codeBlocks(text: string, info: string): string[] {
  return split(text)
    .blocks.filter((b) => b.info === info)
    .map((b) => b.body);
}

/** The lines outside fenced code blocks, and the fenced blocks with their info string. */
function split(text: string): { prose: string[]; blocks: { info: string; body: string }[] } {
  const prose: string[] = [];
  const blocks: { info: string; body: string }[] = [];
  let block: { info: string; lines: string[] } | undefined;
  for (const line of text.split('\n')) {
    if (line.startsWith('```')) {
      if (block) {
        blocks.push({ info: block.info, body: block.lines.join('\n') });
        block = undefined;
      } else block = { info: line.slice(3).trim(), lines: [] };
      continue;
    }
    if (block) block.lines.push(line);
    else prose.push(line);
  }
  return { prose, blocks };
}

/** GitHub's heading anchor: lower case, punctuation other than `-` and `_` dropped, spaces to `-`. */
export function slug(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[`*]/g, '')
    .replace(/[^\p{L}\p{N}\- _]/gu, '')
    .replace(/ /g, '-');
}

export function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const line of split(text).prose) {
    const m = /^#{1,6} (.*)$/.exec(line);
    if (!m) continue;
    const base = slug(m[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** Links `[text](target)` in prose whose target is this repository's (not a URL, not mailto). */
export function localLinks(text: string): string[] {
  const out: string[] = [];
  for (const line of split(text).prose) {
    for (const m of line.matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = m[1]!;
      if (!/^[a-z]+:/i.test(target)) out.push(target);
    }
  }
  return out;
}

const METHOD = '(?:GET|POST|PUT|PATCH|DELETE)';
const ROUTE = new RegExp(`^(${METHOD}(?:/${METHOD})*) (\\S+)$`);

export interface NamedRoute {
  methods: string[];
  /** Candidate concrete paths; the route exists when any of them matches. */
  candidates: string[];
  as: string;
}

/** Parameters stand for a value: `{wid}` becomes `x`; `{a\|b}` alternatives become each. */
function concrete(path: string): string[] {
  const cut = path.replace(/[?#].*$/, '').replace(/[.,;:]+$/, '');
  const alternatives = /\{([^}]*\\\|[^}]*)\}/.exec(cut);
  if (alternatives) {
    return alternatives[1]!.split('\\|').flatMap((alt) => concrete(cut.replace(alternatives[0], alt)));
  }
  const last = /\/([^/]*\|[^/]*)$/.exec(cut);
  if (last) return last[1]!.split('|').flatMap((alt) => concrete(cut.slice(0, last.index + 1) + alt));
  return [cut.replace(/\{[^}]+\}/g, 'x')];
}

/**
 * Every route a page names in inline code: `` `GET /v1/whoami` ``, `` `GET/POST /api/w/{wid}/keys` ``,
 * and, in the same line, shortened ones like `` `DELETE …/keys/{id}` `` (the `…` standing for a
 * leading part of the last full path named before it on that line). Paths with a literal host or
 * a placeholder in angle brackets are examples, not routes, and are left out.
 */
export function namedRoutes(text: string): NamedRoute[] {
  const out: NamedRoute[] = [];
  for (const line of split(text).prose) {
    let last: string | undefined;
    for (const m of line.matchAll(/`([^`]+)`/g)) {
      const code = m[1]!.trim();
      const r = ROUTE.exec(code);
      if (!r) continue;
      const methods = r[1]!.split('/');
      const path = r[2]!;
      if (path.includes('<')) continue;
      if (path.startsWith('/')) {
        last = path;
        out.push({ methods, candidates: concrete(path), as: code });
      } else if (path.startsWith('…') && last) {
        const rest = path.slice(1);
        const parts = last.split('/');
        const prefixes = parts.map((_, i) => parts.slice(0, i + 1).join('/')).filter((p) => p.length > 0);
        out.push({ methods, candidates: prefixes.flatMap((p) => concrete(p + rest)), as: code });
      }
    }
  }
  return out;
}

/** The shell commands of a page's `sh` blocks that call curl, continuation lines joined, comments cut. */
export function curlExamples(text: string): string[] {
  const out: string[] = [];
  for (const block of split(text).blocks) {
    if (block.info !== 'sh' && block.info !== 'bash') continue;
    // A command goes on past a trailing backslash and past line ends inside quotes.
    let command = '';
    for (const raw of block.body.split('\n')) {
      command += raw;
      if (openQuote(command)) {
        command += '\n';
        continue;
      }
      if (command.endsWith('\\')) {
        command = command.slice(0, -1);
        continue;
      }
      const line = stripComment(command).trim();
      if (/^curl\s/.test(line)) out.push(line);
      command = '';
    }
  }
  return out;
}

/** Whether a line ends inside a quoted string (comments aside). */
function openQuote(line: string): boolean {
  let quote: string | undefined;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quote) {
      if (c === quote) quote = undefined;
    } else if (c === "'" || c === '"') quote = c;
    else if (c === '#' && (i === 0 || /\s/.test(line[i - 1]!))) return false;
  }
  return quote !== undefined;
}

/** Cuts a trailing `# comment` that lies outside quotes. */
function stripComment(line: string): string {
  let quote: string | undefined;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quote) {
      if (c === quote) quote = undefined;
    } else if (c === "'" || c === '"') quote = c;
    else if (c === '#' && (i === 0 || /\s/.test(line[i - 1]!))) return line.slice(0, i);
  }
  return line;
}
