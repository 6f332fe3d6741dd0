import { Errors, type Hook } from '@oclif/core';
import { distance } from 'fastest-levenshtein';

/**
 * An unknown command is a usage error (exit 2), with the nearest real command suggested; under
 * --json it is the same `{error}` document every command prints on stdout.
 */
const hook: Hook.CommandNotFound = async function (options) {
  const wanted = options.id.replaceAll(':', ' ');
  const known = options.config.commandIDs.map((id) => id.replaceAll(':', ' '));
  const nearest = known.reduce(
    (best, id) => (distance(wanted, id) < distance(wanted, best) ? id : best),
    known[0] ?? '',
  );
  const close = nearest !== '' && distance(wanted, nearest) <= Math.max(2, Math.floor(wanted.length / 3));
  const message = `svc: "${wanted}" is not a command.${close ? ` Did you mean "${nearest}"?` : ''} See svc --help.`;
  const argv = [...(options.argv ?? []), ...wanted.split(' ')];
  if (argv.includes('--json')) {
    const fix = close ? `Run svc ${nearest}; svc --help lists every command.` : 'svc --help lists every command.';
    process.stdout.write(`${JSON.stringify({ error: { type: 'usage', message, fix, exitCode: 2 } }, null, 2)}\n`);
    Errors.exit(2);
  }
  Errors.error(message, { exit: 2 });
};

export default hook;
