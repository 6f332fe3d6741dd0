import test from 'ava';
import fc from 'fast-check';
import { stringify } from 'yaml';
import { checkDocument, DocumentError, lineOfField, parseWorkspaceFile, secretRefs } from '../../src/setup/document.js';

/**
 * fast-check over the workspace file of `svc apply` (docs/setup-as-code.md): whatever the text,
 * the parser answers a document or a DocumentError (never another throw); every well-formed
 * document survives YAML and back unchanged; a secret written anywhere is refused naming its path
 * and line, never echoed as accepted; and a fault is reported on the line it is on.
 */

const word = fc.stringMatching(/^[a-z][a-z0-9-]{0,15}$/);
const label = fc.stringMatching(/^[a-z][a-z0-9]{0,15}$/);
const email = fc.tuple(label, label).map(([a, b]) => `${a}@${b}.example`);
const envName = fc.stringMatching(/^[A-Z_][A-Z0-9_]{0,20}$/);
const rule = fc.record(
  {
    actions: fc.uniqueArray(fc.constantFrom('payment', 'refund', 'email', 'crm.update', '*'), {
      minLength: 1,
      maxLength: 3,
    }),
    merchants: fc.uniqueArray(
      label.map((w) => `${w}.example`),
      { minLength: 1, maxLength: 3 },
    ),
    currencies: fc.constant(['EUR']),
    maxAmount: fc.integer({ min: 1, max: 1_000_000 }),
    approval: fc.record({
      above: fc.integer({ min: 0, max: 1_000_000 }),
      approvers: fc.uniqueArray(email, { minLength: 2, maxLength: 3 }),
      count: fc.constantFrom(1 as const, 2 as const),
      separationOfDuties: fc.boolean(),
    }),
  },
  { requiredKeys: ['actions', 'currencies'] },
);
const documents = fc.record({
  version: fc.constant(1 as const),
  templates: fc.uniqueArray(fc.record({ name: word, rules: fc.array(rule, { maxLength: 3 }) }), {
    selector: (x) => x.name,
    maxLength: 4,
  }),
  blueprints: fc.uniqueArray(
    fc.record({
      name: word,
      tags: fc.uniqueArray(word, { maxLength: 3 }),
      templates: fc.uniqueArray(word, { maxLength: 3 }),
    }),
    { selector: (x) => x.name, maxLength: 3 },
  ),
  agents: fc.uniqueArray(
    fc.record(
      {
        name: word,
        blueprint: word,
        templates: fc.uniqueArray(word, { maxLength: 2 }),
        actsFor: email,
        tags: fc.uniqueArray(word, { maxLength: 2 }),
        manageMandate: fc.boolean(),
      },
      { requiredKeys: ['name'] },
    ),
    { selector: (x) => x.name, maxLength: 4 },
  ),
  budgets: fc.uniqueArray(
    fc.record({
      scope: fc.oneof(
        fc.constant({ kind: 'workspace' as const }),
        word.map((agent) => ({ kind: 'agent' as const, agent })),
      ),
      amountMicros: fc.integer({ min: 1, max: 10 ** 12 }),
      period: fc.constantFrom('day' as const, 'week' as const, 'month' as const),
    }),
    { selector: (b) => `${JSON.stringify(b.scope)}${b.period}`, maxLength: 3 },
  ),
  mcpServers: fc.uniqueArray(
    fc.record(
      {
        name: word,
        url: label.map((w) => `https://${w}.example/mcp`),
        secret: envName.map((fromEnv) => ({ fromEnv })),
        allowTools: fc.uniqueArray(word, { maxLength: 3 }),
        unprefixed: fc.boolean(),
      },
      { requiredKeys: ['name', 'url'] },
    ),
    { selector: (x) => x.name, maxLength: 3 },
  ),
  integrations: fc.record(
    { issuer: fc.constant({}), stripe: envName.map((fromEnv) => ({ signingSecret: { fromEnv } })) },
    { requiredKeys: [] },
  ),
});

test('any text: a document or a DocumentError, never another failure', (t) => {
  const texts = fc.oneof(
    fc.string({ unit: 'binary', maxLength: 200 }),
    documents.map((d) => stringify(d)).chain((text) => fc.nat({ max: text.length }).map((cut) => text.slice(0, cut))),
    fc.jsonValue().map((v) => stringify(v)),
  );
  fc.assert(
    fc.property(texts, (text) => {
      try {
        parseWorkspaceFile(text);
      } catch (err) {
        if (!(err instanceof DocumentError)) throw err;
        for (const e of err.errors) {
          if (typeof e.field !== 'string' || typeof e.message !== 'string') return false;
          if (e.line !== null && (!Number.isInteger(e.line) || e.line < 1 || e.line > text.split('\n').length + 1))
            return false;
        }
      }
      return true;
    }),
    { numRuns: 150 },
  );
  t.pass();
});

test('a well-formed document survives YAML and back, and its secret references are found', (t) => {
  fc.assert(
    fc.property(documents, (doc) => {
      const parsed = parseWorkspaceFile(stringify(doc));
      t.deepEqual(parsed, checkDocument(doc));
      const refs = secretRefs(parsed).map((r) => r.fromEnv);
      const expected = [
        ...doc.mcpServers.flatMap((s) => (s.secret ? [s.secret.fromEnv] : [])),
        ...(doc.integrations.stripe ? [doc.integrations.stripe.signingSecret.fromEnv] : []),
      ];
      t.deepEqual(refs, expected);
    }),
    { numRuns: 150 },
  );
});

test('a secret written in a secret field, or with a secret form anywhere, is refused naming its path and line', (t) => {
  const secrets = fc.oneof(
    fc.stringMatching(/^(ims|ask|whs)_[A-Za-z0-9]{43}$/),
    fc.stringMatching(/^whsec_[A-Za-z0-9]{24}$/),
    fc.stringMatching(/^ghp_[A-Za-z0-9]{36}$/),
  );
  fc.assert(
    fc.property(documents, secrets, fc.constantFrom('stripe', 'tag', 'mcp'), (doc, secret, where) => {
      const bad = structuredClone(doc) as Record<string, unknown> & typeof doc;
      let path: string;
      if (where === 'stripe') {
        bad.integrations = { ...bad.integrations, stripe: { signingSecret: secret as never } };
        path = 'integrations.stripe.signingSecret';
      } else if (where === 'tag') {
        bad.agents = [{ name: 'x', tags: [secret] }];
        path = 'agents[0].tags[0]';
      } else {
        bad.mcpServers = [{ name: 'm', url: 'https://m.example/mcp', secret: secret as never }];
        path = 'mcpServers[0].secret';
      }
      const text = stringify(bad);
      const error = t.throws(() => parseWorkspaceFile(text), { instanceOf: DocumentError }) as DocumentError;
      t.is(error.type, 'secret_in_file');
      const found = error.errors.find((e) => e.field === path);
      t.truthy(found, JSON.stringify(error.errors));
      t.true(text.split('\n')[found!.line! - 1]!.includes(secret));
    }),
    { numRuns: 100 },
  );
});

test('a fault is reported on its own line, whatever comes before it', (t) => {
  fc.assert(
    fc.property(fc.array(fc.constantFrom('', '# a comment', '   '), { maxLength: 20 }), word, (before, name) => {
      const lines = [...before, 'version: 1', 'agents:', `  - name: ${name}`, '    colour: red'];
      const error = t.throws(() => parseWorkspaceFile(lines.join('\n')), {
        instanceOf: DocumentError,
      }) as DocumentError;
      t.deepEqual(
        error.errors.map((e) => [e.field, e.line]),
        [['agents[0].colour', lines.length]],
      );
    }),
    { numRuns: 100 },
  );
});

test('names are unique within a section; references to secrets are mappings naming a variable', (t) => {
  const twice = t.throws(() =>
    checkDocument({
      version: 1,
      templates: [
        { name: 'a', rules: [] },
        { name: 'a', rules: [] },
      ],
    }),
  ) as DocumentError;
  t.is(twice.type, 'invalid_workspace_file');
  t.is(twice.errors[0]!.field, 'templates[1]');
  const ref = t.throws(() =>
    checkDocument({ version: 1, integrations: { stripe: { signingSecret: { fromEnv: 'not a name' } } } }),
  ) as DocumentError;
  t.is(ref.errors[0]!.field, 'integrations.stripe.signingSecret.fromEnv');
  const budgets = t.throws(() =>
    checkDocument({
      version: 1,
      budgets: [
        { scope: { kind: 'workspace' }, amountMicros: 1, period: 'day' },
        { scope: { kind: 'workspace' }, amountMicros: 2, period: 'day' },
      ],
    }),
  ) as DocumentError;
  t.regex(budgets.errors[0]!.message, /second budget for the same scope and period/);
});

test('a field the server names is found on its line of the file (the server knows paths, not lines)', (t) => {
  fc.assert(
    fc.property(documents, (doc) => {
      const text = stringify(doc);
      const lines = text.split('\n');
      const lineOf = lineOfField(text);
      doc.agents.forEach((a, i) => {
        t.true(lines[lineOf(`agents[${i}].name`)! - 1]!.includes(`name: ${a.name}`));
        if (a.blueprint) t.true(lines[lineOf(`agents[${i}].blueprint`)! - 1]!.includes(`blueprint: ${a.blueprint}`));
      });
      doc.templates.forEach((tpl, i) => t.true(lines[lineOf(`templates[${i}].name`)! - 1]!.includes(tpl.name)));
    }),
    { numRuns: 100 },
  );
  t.is(lineOfField('version: 1\nagents:\n  - name: a\n')('agents[0].missing'), 3);
  t.is(lineOfField('version: [\n')('version'), null);
});

test('an integration written with nothing after it is set up with its defaults; a private key in a key set is refused', (t) => {
  t.deepEqual(parseWorkspaceFile('version: 1\nintegrations:\n  issuer:\n  chat-relay:\n').integrations, {
    issuer: {},
    'chat-relay': {},
  });
  const text =
    'version: 1\nintegrations:\n  ssf:\n    issuer: a\n    audience: b\n    jwks: { keys: [{ kty: EC, d: x }] }\n';
  const error = t.throws(() => parseWorkspaceFile(text), { instanceOf: DocumentError }) as DocumentError;
  t.deepEqual(error.errors, [
    {
      field: 'integrations.ssf.jwks.keys[0].d',
      line: 6,
      message: 'a key set here holds public keys only; integrations.ssf.jwks.keys[0].d is a private key member',
    },
  ]);
});
