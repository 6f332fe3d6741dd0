import test from 'ava';
import fc from 'fast-check';
import { toolState } from '../../src/mcp/pins.js';
import { mayCall, mayUseServer } from '../../src/mcp/narrowing.js';
import type { MandateRule } from '../../src/mandates/records.js';
import type { McpServerRecord } from '../../src/mcp/records.js';

/**
 * The pieces of the defending proxy without a server: the pin hash (a known answer, and
 * properties: key order never counts, any change of description, either schema or annotations
 * does, and a tool declaring no output schema or annotations hashes as it always did) and the
 * narrowing (a tool is listed exactly when the gate would not deny it; prompts of a server are
 * offered whenever some tool of it could be called).
 */
const server = (name: string, url = 'https://tools.acme.example/mcp'): McpServerRecord => ({
  name,
  workspaceId: 'ws_test',
  url,
  secretSealed: null,
  allowTools: null,
  unprefixed: false,
  createdAt: '2026-01-01T00:00:00.000Z',
  createdBy: 'user:test',
});
const rule = (actions: string[], more: Partial<MandateRule> = {}): MandateRule =>
  ({ id: 'mnd_0000000000000000000000', actions, domains: ['*'], ...more }) as MandateRule;

test('the pin hash is SHA-256 hex of the canonical { description, inputSchema } (known answer)', (t) => {
  // echo -n '{"description":"Says the text back.","inputSchema":{"properties":{"text":{"type":"string"}},"required":["text"],"type":"object"}}' | sha256sum
  const state = toolState({
    name: 'echo',
    description: 'Says the text back.',
    inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  });
  t.is(state.hash, 'ec1e0ff49406068af71bdb3a62fd287c15e714ab515ab1e1c5b21582c3217e6c');
  t.is(toolState({ name: 'x', inputSchema: {} }).description, null, 'no description hashes as null');
});

const json = fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<unknown>;
const schema = fc.dictionary(fc.string({ maxLength: 8 }), json, { maxKeys: 6 });

test('key order never changes the hash; a changed description or schema always does', (t) => {
  fc.assert(
    fc.property(
      fc.option(fc.string(), { nil: undefined }),
      schema,
      fc.string({ minLength: 1 }),
      (description, s, extra) => {
        const reversed = Object.fromEntries(Object.entries(s).reverse());
        const a = toolState({ name: 't', description, inputSchema: s });
        t.is(toolState({ name: 't', description, inputSchema: reversed }).hash, a.hash);
        t.not(toolState({ name: 't', description: `${description ?? ''}${extra}`, inputSchema: s }).hash, a.hash);
        t.not(toolState({ name: 't', description, inputSchema: { ...s, [`k${extra}`]: extra } }).hash, a.hash);
      },
    ),
  );
});

test('any change of the output schema or annotations changes the hash; a tool declaring neither hashes as before', (t) => {
  fc.assert(
    fc.property(
      fc.option(fc.string(), { nil: undefined }),
      schema,
      schema,
      fc.string({ minLength: 1 }),
      fc.boolean(),
      (description, s, declared, extra, annotations) => {
        const field = annotations ? 'annotations' : 'outputSchema';
        const bare = toolState({ name: 't', description, inputSchema: s });
        const sameBare = toolState({ name: 't', description, inputSchema: s, [field]: undefined });
        t.is(sameBare.hash, bare.hash, 'absent and undefined are the same');
        const withIt = toolState({ name: 't', description, inputSchema: s, [field]: declared });
        t.not(withIt.hash, bare.hash, 'declaring one (even empty) is a change');
        t.deepEqual(withIt[field], declared);
        const changed = toolState({
          name: 't',
          description,
          inputSchema: s,
          [field]: { ...declared, [`k${extra}`]: extra },
        });
        t.not(changed.hash, withIt.hash);
        const reversed = Object.fromEntries(Object.entries(declared).reverse());
        t.is(toolState({ name: 't', description, inputSchema: s, [field]: reversed }).hash, withIt.hash);
      },
    ),
  );
  // The flip the issue names: readOnlyHint true to false.
  const flip = (readOnlyHint: boolean) =>
    toolState({ name: 'add', inputSchema: {}, annotations: { readOnlyHint } }).hash;
  t.not(flip(true), flip(false));
});

test('narrowing: examples of what a mandate shows', (t) => {
  const files = server('files');
  t.true(mayCall([rule(['mcp.files.echo'])], files, 'echo', 0));
  t.false(mayCall([rule(['mcp.files.echo'])], files, 'add', 0));
  t.true(mayCall([rule(['mcp.*'], { domains: ['*.acme.example'] })], files, 'add', 0));
  t.false(mayCall([rule(['mcp.*'], { domains: ['other.example'] })], files, 'add', 0));
  t.false(mayCall([rule(['mcp.files.*'], { merchants: ['acme.example'], domains: undefined })], files, 'add', 0));
  t.true(mayCall([rule(['mcp.files.read_file'])], files, 'read.file', 0), 'a dot in a tool name is a _ in its type');
  t.false(mayCall([], files, 'echo', 0), 'no mandate, nothing');
  t.true(mayUseServer([rule(['mcp.files.echo'])], files));
  t.true(mayUseServer([rule(['*'])], files));
  t.false(mayUseServer([rule(['mcp.filesystem.*'])], files), 'another server whose name starts alike');
  t.false(mayUseServer([rule(['mcp.files.sub.*'])], files), 'a pattern no tool type can match');
  t.false(mayUseServer([rule(['payment'])], files));
});

const segment = fc.stringMatching(/^[A-Za-z0-9_-]{1,8}$/);
const pattern = fc.oneof(
  fc.constant('*'),
  fc.constant('mcp.*'),
  segment.map((s) => `mcp.${s}.*`),
  fc.tuple(segment, segment).map(([a, b]) => `mcp.${a}.${b}`),
  fc.constant('mcp.files.*'),
  segment.map((s) => `mcp.files.${s}`),
  segment.map((s) => `${s}.*`),
);
const domains = fc.oneof(
  fc.constant(['*']),
  fc.constant(['tools.acme.example']),
  fc.constant(['*.acme.example']),
  fc.constant(['elsewhere.example']),
);

test('narrowing: whenever some tool of a server could be called, its prompts are offered', (t) => {
  fc.assert(
    fc.property(
      fc.array(fc.record({ actions: fc.array(pattern, { minLength: 1, maxLength: 3 }), domains }), { maxLength: 3 }),
      fc.string({ minLength: 1, maxLength: 10 }),
      (rules, tool) => {
        const r = rules.map((x) => rule(x.actions, { domains: [...x.domains] }));
        if (mayCall(r, server('files'), tool, 0)) t.true(mayUseServer(r, server('files')));
      },
    ),
  );
});
