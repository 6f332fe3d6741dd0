import test from 'ava';
import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { Config, Help } from '@oclif/core';
import { COMMAND_CLASSES } from '../../src/cli/generated/command-classes.js';
import { COMMANDS } from '../../src/cli/generated/commands.js';
import { ROOT, svc } from '../helpers/process.js';

/**
 * The commands come from one generated index (oclif's explicit strategy), not from a scan of
 * commands/: every file there must be in it, under the id the file's path gives, and every
 * command and topic must still answer --help through the npm-installed svc. The index loads a
 * command's module only when it runs; help comes from oclif.manifest.json (written by the build).
 */

async function commandFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(join(ROOT, dir), { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await commandFiles(path)));
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

test('every file under commands/ is in the generated index, by the id its path gives', async (t) => {
  const files = await commandFiles('commands');
  const ids = files.map((f) => relative('commands', f).replace(/\.ts$/, '').split('/').join(':')).sort();
  t.true(ids.length >= 13, 'the scan found the commands');
  t.deepEqual(Object.keys(COMMANDS).sort(), ids);
  t.deepEqual(Object.keys(COMMAND_CLASSES).sort(), ids);
  for (const [id, command] of Object.entries(COMMAND_CLASSES)) {
    t.is(typeof command.run, 'function', `${id} is a command class`);
    t.truthy(command.summary, `${id} has a summary`);
    t.true((command.examples ?? []).length > 0, `${id} has an example`);
  }
});

test('package.json points oclif at the generated index with the explicit strategy', async (t) => {
  const pjson = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as {
    oclif: { commands: unknown };
  };
  t.deepEqual(pjson.oclif.commands, {
    strategy: 'explicit',
    target: './dist/src/cli/generated/commands.js',
    identifier: 'COMMANDS',
  });
});

test('svc --help lists every topic and top-level command, and each topic answers --help', async (t) => {
  t.timeout(180_000, 'one svc process per topic, one after another');
  const top = await svc(['--help']);
  t.is(top.code, 0, top.stderr);
  const ids = Object.keys(COMMANDS);
  // Every prefix of a command id is a topic (`mcp`, `mcp:servers`), and lists what is one level below it.
  const topics = [
    ...new Set(
      ids.flatMap((id) =>
        id
          .split(':')
          .slice(0, -1)
          .map((_, i, all) => all.slice(0, i + 1).join(':')),
      ),
    ),
  ];
  const singles = ids.filter((id) => !id.includes(':'));
  for (const name of [...topics.filter((x) => !x.includes(':')), ...singles])
    t.regex(top.stdout, new RegExp(`^  ${name} `, 'm'), name);
  for (const topic of topics) {
    const { code, stdout, stderr } = await svc([...topic.split(':'), '--help']);
    t.is(code, 0, `svc ${topic} --help: ${stderr}`);
    const depth = topic.split(':').length + 1;
    for (const id of ids.filter((i) => i.startsWith(`${topic}:`))) {
      const child = id.split(':').slice(0, depth).join(' ');
      t.true(stdout.includes(child), `svc ${topic.split(':').join(' ')} --help lists ${child}`);
    }
  }
});

test("oclif, loaded as svc loads it, finds every command through the index and renders each one's help", async (t) => {
  const config = await Config.load({ root: ROOT, userPlugins: false, devPlugins: false });
  t.deepEqual(config.commandIDs.slice().sort(), Object.keys(COMMANDS).sort());
  const help = new (class extends Help {
    commandHelp(command: Parameters<Help['formatCommand']>[0]): string {
      return this.formatCommand(command);
    }
  })(config);
  for (const id of Object.keys(COMMANDS)) {
    const command = await config.findCommand(id, { must: true }).load();
    t.is(command as unknown, COMMANDS[id as keyof typeof COMMANDS], `${id} is the indexed command`);
    // The manifest (oclif.manifest.json) carries what the class declares, --json aside (oclif adds it).
    const names = (flags: object) =>
      Object.keys(flags)
        .filter((f) => f !== 'json')
        .sort();
    t.deepEqual(
      names(config.findCommand(id, { must: true }).flags),
      names(COMMAND_CLASSES[id as keyof typeof COMMAND_CLASSES].flags ?? {}),
      `${id}: the manifest is current`,
    );
    const text = help.commandHelp(config.findCommand(id, { must: true }));
    t.true(text.includes(`$ svc ${id.split(':').join(' ')}`), `${id}'s help shows its usage`);
  }
});

test('svc --version names the version and the git commit it was built from', async (t) => {
  const pjson = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { version: string };
  const { code, stdout } = await svc(['--version']);
  t.is(code, 0);
  const escaped = pjson.version.replaceAll('.', '\\.');
  t.regex(stdout, new RegExp(`^svc/${escaped}\\+([0-9a-f]{12}(\\.dirty)?|unknown) linux-`));
});

test('an unknown command is still a usage error with the nearest command suggested', async (t) => {
  const { code, stderr } = await svc(['kees', 'create']);
  t.is(code, 2);
  t.regex(stderr, /"kees create" is not a command\. Did you mean "keys create"\?/);
});
