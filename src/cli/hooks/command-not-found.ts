import { Errors, type Hook } from '@oclif/core';
import { distance } from 'fastest-levenshtein';

/** An unknown command is a usage error (exit 2), with the nearest real command suggested. */
const hook: Hook.CommandNotFound = async function (options) {
  const wanted = options.id.replaceAll(':', ' ');
  const known = options.config.commandIDs.map((id) => id.replaceAll(':', ' '));
  const nearest = known.reduce(
    (best, id) => (distance(wanted, id) < distance(wanted, best) ? id : best),
    known[0] ?? '',
  );
  const close = nearest !== '' && distance(wanted, nearest) <= Math.max(2, Math.floor(wanted.length / 3));
  Errors.error(`svc: "${wanted}" is not a command.${close ? ` Did you mean "${nearest}"?` : ''} See svc --help.`, {
    exit: 2,
  });
};

export default hook;
