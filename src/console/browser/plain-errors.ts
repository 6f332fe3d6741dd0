/**
 * An API error's message as plain sentences for the console: a request field's checker speaks
 * of the field by its JSON name in quotes ('"newPassword" length must be at least 12 characters
 * long'); a person reads the name of what they typed ("The new password must be at least 12
 * characters long."). Messages that are already sentences pass through unchanged. No DOM here,
 * so the tests run it as the page does.
 */

/** What a field is called on the console's forms, by its JSON name (the last part of its path). */
const FIELD_NAMES: Record<string, string> = {
  newPassword: 'the new password',
  currentPassword: 'the current password',
  code: 'the code',
  totp: 'the code',
  name: 'the name',
  tags: 'the tags',
  templates: 'the templates',
  actions: 'the actions',
  merchants: 'the merchants',
  domains: 'the domains',
  currencies: 'the currency',
  maxAmount: 'the largest amount',
  above: 'the approval line',
  amount: 'the amount',
  period: 'the period',
  url: 'the address',
  secret: 'the secret',
};

/** "rules[0].approval.above" as a person reads it: "the approval line (rule 1)". */
function fieldName(label: string): string {
  const parts = label.split('.');
  const last = (parts[parts.length - 1] ?? label).replace(/\[\d+\]$/, '');
  const known = FIELD_NAMES[last];
  const words =
    known ??
    'the ' +
      last
        .replace(/([a-z])([A-Z])/g, '$1 $2')
        .replace(/[_-]+/g, ' ')
        .toLowerCase();
  const rule = /^rules\[(\d+)\]/.exec(label);
  return rule ? `${words} (rule ${Number(rule[1]) + 1})` : words;
}

function sentence(text: string): string {
  const trimmed = text.trim();
  if (!trimmed) return '';
  const capital = trimmed.charAt(0).toUpperCase() + trimmed.slice(1);
  return /[.!?]$/.test(capital) ? capital : `${capital}.`;
}

/** One checker message ('"x" must be …') as a sentence ("The x must be …."). */
function plainOne(message: string): string {
  const text = message
    .replace(/^"([^"]+)"/, (_m, label: string) => fieldName(label))
    .replace(/ length must be at least (\d+) characters long/, ' must be at least $1 characters long')
    .replace(/ length must be less than or equal to (\d+) characters long/, ' must be at most $1 characters long')
    .replace(/ is not allowed to be empty$/, ' is empty: fill it in')
    .replace(/ is required$/, ' is missing: fill it in')
    .replace(/ does not match any of the allowed types$/, ' is not in a form svc takes')
    .replace(/ with value "([^"]*)" fails to match the required pattern: .*$/, ' "$1" is not written as expected');
  return sentence(text);
}

/** An error message of the API as plain sentences (a checker's several messages, one each). */
export function plainMessage(message: string): string {
  if (!/"[^"]+"/.test(message)) return sentence(message);
  return message
    .split(/;\s+/)
    .map((part) => plainOne(part))
    .filter(Boolean)
    .join(' ');
}
