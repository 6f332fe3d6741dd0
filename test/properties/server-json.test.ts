import test from 'ava';
import fc from 'fast-check';
import { CliFailure } from '../../src/cli/base-command.js';
import { remoteFromServerJson, type RegistryRemote } from '../../src/cli/mcp-registry.js';
import { printable } from '../../src/cli/printable.js';
import { problemText, toolLines } from '../../src/cli/mcp.js';

/**
 * `svc mcp servers add --from`: an MCP Registry server.json gives its streamable-http remote, or
 * a usage error (exit 2, `invalid_request` naming the field) that says why; whatever the file
 * holds, never another exception.
 */
const NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** The parser's outcome: the remote, or the usage error it refused with (any other throw fails the property). */
function outcome(text: string): RegistryRemote | CliFailure {
  try {
    return remoteFromServerJson(text, 'server.json');
  } catch (err) {
    if (err instanceof CliFailure && err.exitCode === 2 && err.type === 'invalid_request') return err;
    throw err;
  }
}

const refusal = (doc: unknown): CliFailure => {
  const out = outcome(JSON.stringify(doc));
  if (!(out instanceof CliFailure)) throw new Error(`accepted ${JSON.stringify(doc)}`);
  return out;
};

const remote = fc.record(
  {
    type: fc.oneof(fc.constantFrom('streamable-http', 'sse', 'stdio'), fc.string()),
    url: fc.oneof(fc.webUrl(), fc.string()),
    headers: fc.array(
      fc.record(
        {
          name: fc.oneof(fc.constantFrom('Authorization', 'X-API-Key'), fc.string()),
          value: fc.oneof(fc.constantFrom('Bearer {token}', 'Basic {b}'), fc.string()),
          isRequired: fc.boolean(),
          isSecret: fc.boolean(),
        },
        { requiredKeys: [] },
      ),
      { maxLength: 3 },
    ),
  },
  { requiredKeys: [] },
);
const pkg = fc.record(
  {
    registryType: fc.oneof(fc.constantFrom('npm', 'pypi', 'oci'), fc.string()),
    identifier: fc.string(),
    version: fc.string(),
    transport: fc.record({ type: fc.constantFrom('stdio', 'streamable-http') }, { requiredKeys: [] }),
  },
  { requiredKeys: [] },
);
/** Documents near the schema: each field present or not, well or badly typed. */
const nearly = fc.record(
  {
    name: fc.oneof(fc.constantFrom('io.github.acme/files', 'x/', '/'), fc.string(), fc.integer()),
    version: fc.oneof(fc.string(), fc.integer()),
    remotes: fc.oneof(fc.array(remote, { maxLength: 3 }), fc.jsonValue()),
    packages: fc.oneof(fc.array(pkg, { maxLength: 2 }), fc.jsonValue()),
  },
  { requiredKeys: [] },
);

test('server.json: any text, any JSON, any near-document is a remote or a clear usage error, never a crash', (t) => {
  const check = (text: string) => {
    const out = outcome(text);
    if (out instanceof CliFailure) return out.message.startsWith('server.json: ') && out.fix !== undefined;
    return NAME.test(out.name) && (out.url === null || out.url.length > 0);
  };
  fc.assert(fc.property(fc.string(), check));
  fc.assert(fc.property(fc.jsonValue(), (v) => check(JSON.stringify(v))));
  fc.assert(fc.property(nearly, (doc) => check(JSON.stringify(doc))));
  fc.assert(fc.property(nearly, (doc) => check(JSON.stringify({ server: doc, _meta: {} }))));
  t.pass();
});

test('server.json: the streamable-http remote is taken, named by the last part of the registry name', (t) => {
  const doc = {
    $schema: 'https://static.modelcontextprotocol.io/schemas/2025-10-17/server.schema.json',
    name: 'io.github.acme/Files.Server',
    version: '1.0.0',
    remotes: [
      { type: 'sse', url: 'https://acme.example/sse' },
      { type: 'streamable-http', url: 'https://acme.example/mcp', headers: [{ name: 'X-Trace', isRequired: false }] },
    ],
    packages: [{ registryType: 'npm', identifier: '@acme/files', transport: { type: 'stdio' } }],
  };
  t.deepEqual(outcome(JSON.stringify(doc)), {
    registryName: 'io.github.acme/Files.Server',
    name: 'Files-Server',
    url: 'https://acme.example/mcp',
    needsSecret: false,
  });
  // A registry API answer is read as its server.
  t.like(outcome(JSON.stringify({ server: doc, _meta: {} })), { url: 'https://acme.example/mcp' });
  // A bearer Authorization header asks for the secret; a URL with variables is left to fill in.
  t.like(
    outcome(
      JSON.stringify({
        name: 'io.github.acme/t',
        remotes: [
          {
            type: 'streamable-http',
            url: 'https://{tenant}.acme.example/mcp',
            headers: [{ name: 'authorization', value: 'Bearer {token}', isRequired: true, isSecret: true }],
          },
        ],
      }),
    ),
    { name: 't', url: null, needsSecret: true },
  );
});

test('server.json: what svc cannot add is refused by name', (t) => {
  const local = refusal({
    name: 'io.github.acme/local',
    packages: [{ registryType: 'pypi', identifier: 'acme-local', version: '2.0', transport: { type: 'stdio' } }],
  });
  t.regex(local.message, /io\.github\.acme\/local is a local server \(pypi package acme-local 2\.0, stdio\)/);
  t.regex(local.fix!, /configuration file/);
  t.deepEqual(local.details.errors, [{ field: 'packages', message: local.message.replace('server.json: ', '') }]);

  t.regex(
    refusal({ name: 'a/sse', remotes: [{ type: 'sse', url: 'https://a.example/sse' }] }).message,
    /offers no streamable-http remote \(only sse\)/,
  );
  const header = (h: object) =>
    refusal({ name: 'a/h', remotes: [{ type: 'streamable-http', url: 'https://a/', headers: [h] }] });
  t.regex(header({ name: 'X-API-Key', isRequired: true }).message, /requires the header X-API-Key/);
  t.regex(header({ name: 'Authorization', value: 'Basic {b}' }).message, /not a bearer token \(Basic\)/);
  t.regex(refusal({ name: 'a/empty' }).message, /has neither remotes nor packages/);
  t.regex(refusal({ remotes: [] }).message, /"name" is required/);
  t.regex(outcome('{"name":').toString(), /not JSON/);
});

// eslint-disable-next-line no-control-regex -- what must not reach a terminal
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

test('server.json: what the file says is shown without its control characters', (t) => {
  const hostile = refusal({
    name: 'io.github.evil/x\u001b[2J\nsvc: all good',
    packages: [{ registryType: 'npm', identifier: 'evil\u0007', transport: { type: 'stdio' } }],
  });
  t.false(CONTROL.test(hostile.message), hostile.message);
  t.true(hostile.message.includes('x\\u001b[2J\\u000asvc: all good'), hostile.message);
  // Any text: nothing a terminal acts on is left, and plain text is unchanged.
  fc.assert(fc.property(fc.string({ unit: 'binary' }), (s) => !CONTROL.test(printable(s))));
  fc.assert(fc.property(fc.string({ unit: fc.constantFrom(...'abc xyz-_/.:()') }), (s) => printable(s) === s));
});

test("svc mcp's text shows an upstream's words (tool names, the start of its answer) printable", (t) => {
  const pin = { tool: 'echo\u001b]0;owned\u0007', status: 'new', approved: null, changed: { hash: 'ab' } };
  const [line] = toolLines({ data: [{ server: 'files', ...pin } as never], unreachable: [] });
  t.is(line, 'files  echo\\u001b]0;owned\\u0007  new       ab');
  t.is(
    problemText({ cause: 'http_status', message: 'it answered HTTP 403', status: 403, body: 'no\r\nsvc: fine' }),
    'it answered HTTP 403: no\\u000d\\u000asvc: fine',
  );
});
