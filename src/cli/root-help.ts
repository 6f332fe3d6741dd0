import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { VERSION_LINE } from './version.js';

interface Manifest {
  commands: Record<string, { summary?: string; description?: string; hidden?: boolean }>;
}
interface PackageJson {
  oclif: { bin: string; description?: string; topics?: Record<string, { description?: string }> };
}

/** Words of `text` in lines of at most `width` characters (a longer word keeps a line of its own). */
function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/).filter(Boolean)) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(line);
  return lines;
}

/** A description line as is when it fits, else wrapped keeping a leading `N  ` (an exit code's row). */
function detailLines(line: string, width: number): string[] {
  if (line.length <= width) return [line];
  const row = /^(\S+ {2})(.*)$/.exec(line);
  if (!row) return wrap(line, width);
  const [first = '', ...rest] = wrap(row[2]!, width - row[1]!.length);
  return [row[1] + first, ...rest];
}

/** Rows of a name column and a wrapped text column, in oclif's layout. */
function table(rows: Array<[string, string]>, width: number): string[] {
  const pad = Math.max(...rows.map(([name]) => name.length)) + 2;
  return rows.flatMap(([name, text]) =>
    wrap(text, Math.max(20, width - 2 - pad)).map((l, i) => `  ${(i === 0 ? name : '').padEnd(pad)}${l}`),
  );
}

/**
 * `svc --help` (and `svc` alone) from package.json and the manifest that `npm run build` writes,
 * without loading oclif or any command: the same sections oclif prints (its help renders each
 * command's own `--help`). Null when the manifest is missing, so that oclif answers instead.
 */
export function rootHelp(root: string, columns = 80): string | null {
  let manifest: Manifest;
  let pjson: PackageJson;
  try {
    manifest = JSON.parse(readFileSync(join(root, 'oclif.manifest.json'), 'utf8')) as Manifest;
    pjson = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as PackageJson;
  } catch {
    return null;
  }
  const width = Math.min(Math.max(columns, 40), 120);
  const [summary = '', ...details] = (pjson.oclif.description ?? '').split('\n');
  const ids = Object.keys(manifest.commands).filter((id) => !manifest.commands[id]!.hidden);
  const topics = [...new Set(ids.filter((id) => id.includes(':')).map((id) => id.split(':')[0]!))].sort();
  const commands = ids.filter((id) => !id.includes(':')).sort();
  const firstLine = (id: string) =>
    (manifest.commands[id]!.summary ?? manifest.commands[id]!.description ?? '').split('\n')[0]!;
  const out = [
    ...wrap(summary, width),
    '',
    'VERSION',
    `  ${VERSION_LINE}`,
    '',
    'USAGE',
    `  $ ${pjson.oclif.bin} [COMMAND]`,
    '',
    ...(details.length
      ? ['DESCRIPTION', ...details.flatMap((d) => detailLines(d.trim(), width - 2).map((l) => `  ${l}`)), '']
      : []),
    'TOPICS',
    ...table(
      topics.map((t) => [t, pjson.oclif.topics?.[t]?.description ?? '']),
      width,
    ),
    '',
    'COMMANDS',
    ...table(
      commands.map((c) => [c, firstLine(c)]),
      width,
    ),
    '',
  ];
  return out.join('\n');
}
