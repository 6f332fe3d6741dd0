import test from 'ava';
import fc from 'fast-check';
import { readFile } from 'node:fs/promises';
import Serve from '../../commands/serve.js';
import { walk } from '../../src/settings/define.js';
import { docsRows, docsTable, TABLE_END, TABLE_START, undocumented } from '../../src/settings/docs.js';
import { loadSettings, SettingsError } from '../../src/settings/load.js';
import { declarations, environment, PROVIDER_KINDS } from '../../src/settings/schema.js';

/**
 * One declaration per setting gives its type, validation, default, environment variable and docs
 * row: these tests hold docs/configuration.md to the declarations, and the environment the loader
 * reads to them.
 */

const PAGE = new URL('../../docs/configuration.md', import.meta.url);

interface PageRow {
  setting: string;
  environment: string;
  default: string;
}

/** The page's table rows, by their cells (a `\|` inside a cell is not a border). */
function pageRows(page: string): PageRow[] {
  const start = page.indexOf(TABLE_START);
  const end = page.indexOf(TABLE_END);
  if (start < 0 || end < start) return [];
  return page
    .slice(start, end)
    .split('\n')
    .filter((line) => line.startsWith('| `'))
    .map((line) => {
      const cells = line
        .slice(1, -1)
        .split(/(?<!\\)\|/)
        .map((cell) => cell.trim());
      return { setting: cells[0] ?? '', environment: cells[1] ?? '', default: cells[2] ?? '' };
    });
}

test('docs/configuration.md lists every setting once, with its environment variable and default', async (t) => {
  const page = await readFile(PAGE, 'utf8');
  const onPage = new Map(pageRows(page).map((row) => [row.setting, row]));
  const declared = new Map(docsRows().map((row) => [row.setting, row]));
  const missing = [...declared.keys()].filter((name) => !onPage.has(name));
  const extra = [...onPage.keys()].filter((name) => !declared.has(name));
  const wrong = [...declared.values()].flatMap((row) => {
    const shown = onPage.get(row.setting);
    if (!shown) return [];
    return (['environment', 'default'] as const)
      .filter((column) => shown[column] !== row[column])
      .map((column) => `${row.setting} ${column}: the page says ${shown[column]}, the declaration ${row[column]}`);
  });
  const fix = 'run node scripts/settings-docs.mjs';
  t.deepEqual(missing, [], `rows missing from the page (${fix})`);
  t.deepEqual(extra, [], `rows on the page that no setting declares (${fix})`);
  t.deepEqual(wrong, [], `rows that disagree with their declaration (${fix})`);
  t.true(declared.size > 90, `the table has a row per setting (${declared.size})`);
  t.true(page.includes(docsTable()), `the page holds the rendered table word for word (${fix})`);
});

test('the rows check sees a missing, an extra and a wrong row', (t) => {
  const table = docsTable();
  const rows = table.split('\n');
  const portRow = rows.findIndex((line) => line.startsWith('| `server.port` |'));
  const edited = [
    ...rows.slice(0, portRow),
    rows[portRow]!.replace('`8080`', '`8081`'),
    '| `server.prot` | | `1` | integer | a typo |',
    ...rows.slice(portRow + 2),
  ].join('\n');
  const names = pageRows(edited).map((row) => row.setting);
  t.false(names.includes('`server.workers`'), 'the row after server.port is gone');
  t.true(names.includes('`server.prot`'));
  t.is(pageRows(edited).find((row) => row.setting === '`server.port`')?.default, '`8081`');
});

test('every setting a person can give is explained by a row of its own or of the object it is in', (t) => {
  t.deepEqual(undocumented(), []);
});

test('each environment variable is named once and sets a declared setting', (t) => {
  const names = environment.map((variable) => variable.name);
  t.deepEqual(
    names.filter((name, i) => names.indexOf(name) !== i),
    [],
  );
  const paths = new Set(walk(declarations).map((visit) => visit.path));
  t.deepEqual(
    environment.filter((variable) => !paths.has(variable.path)),
    [],
  );
  t.true(
    names.includes('SVC_GATE_RATE_PER_MINUTE') && names.includes('NODE_ENV') && names.includes('OTEL_SERVICE_NAME'),
  );
  // A variable holds one word, or a comma list of words: never an object or a list of objects.
  const objects = walk(declarations).filter(
    ({ setting }) =>
      setting.meta.env !== undefined &&
      (setting.fields !== undefined || (setting.item !== undefined && setting.item.schema.type !== 'string')),
  );
  t.deepEqual(
    objects.map(({ path }) => path),
    [],
  );
});

test('the flags the table names are flags of svc serve', (t) => {
  const flags = walk(declarations).flatMap(({ setting }) => (setting.meta.flag ? [setting.meta.flag] : []));
  t.true(flags.length >= 5);
  for (const flag of flags) t.truthy(Serve.flags[flag.replace(/^--/, '') as keyof typeof Serve.flags], flag);
});

/** The value at a dotted path of the loaded settings. */
function at(settings: unknown, path: string): unknown {
  return path.split('.').reduce<unknown>((node, key) => (node as Record<string, unknown>)[key], settings);
}

interface NumberRule {
  name: string;
  args?: { limit?: number };
}

/** The environment variables of number settings, with the range their schema accepts. */
const numeric = environment.flatMap((variable) => {
  const setting = walk(declarations).find((visit) => visit.path === variable.path)!.setting;
  const described = setting.schema.describe() as { type: string; rules?: NumberRule[] };
  if (described.type !== 'number') return [];
  const limit = (name: string) => described.rules?.find((rule) => rule.name === name)?.args?.limit;
  return [
    {
      ...variable,
      integer: described.rules?.some((rule) => rule.name === 'integer') ?? false,
      min: limit('min') ?? 0,
      max: limit('max') ?? 2 ** 31,
      bounded: limit('max') !== undefined,
    },
  ];
});

test('a number setting takes any value of its range from its environment variable, and refuses one past it, naming the setting', (t) => {
  t.true(numeric.length > 30, `number settings with a variable (${numeric.length})`);
  fc.assert(
    fc.property(fc.constantFrom(...numeric), fc.double({ min: 0, max: 1, noNaN: true }), (variable, fraction) => {
      const raw = variable.min + (variable.max - variable.min) * fraction;
      const value = variable.integer ? Math.round(raw) : raw;
      const loaded = loadSettings({ env: { [variable.name]: String(value) } });
      if (at(loaded, variable.path) !== value) return false;
      const past = variable.bounded ? variable.max + 1 : variable.min - 1;
      try {
        loadSettings({ env: { [variable.name]: String(past) } });
        return false;
      } catch (err) {
        return err instanceof SettingsError && err.message.includes(`${variable.path}:`);
      }
    }),
    { numRuns: 200 },
  );
  t.pass();
});

test('a closed list of words and a yes-or-no setting are set from their variables', (t) => {
  t.is(loadSettings({ env: { SVC_LOG_FORMAT: 'json' } }).log.format, 'json');
  t.is(loadSettings({ env: { SVC_GATEWAY_DATA_LOSS: 'block' } }).gateway.dataLoss, 'block');
  t.true(loadSettings({ env: { SVC_MCP_ALLOW_PRIVATE_UPSTREAMS: '1' } }).mcp.allowPrivateUpstreams);
  t.false(loadSettings({ env: { SVC_WEBHOOKS_ALLOW_PRIVATE_TARGETS: '0' } }).webhooks.allowPrivateTargets);
  t.deepEqual(
    loadSettings({ env: { SVC_MCP_ALLOWED_ORIGINS: 'https://a.example, http://b.example:8080' } }).mcp.allowedOrigins,
    ['https://a.example', 'http://b.example:8080'],
  );
  t.throws(() => loadSettings({ env: { SVC_GATEWAY_ENFORCEMENT: 'strict' } }), {
    instanceOf: SettingsError,
    message: /gateway\.enforcement: "gateway\.enforcement" must be one of \[enforce, shadow\]/,
  });
});

test('every provider kind the gateway knows is accepted, and the message for another lists them all', (t) => {
  for (const kind of PROVIDER_KINDS) {
    const provider = {
      id: kind,
      kind,
      ...(kind === 'bedrock' ? { region: 'us-east-1' } : { baseUrl: 'http://127.0.0.1:9' }),
      ...(kind === 'azure-openai' ? { apiVersion: '2024-10-21' } : {}),
    };
    t.is(loadSettings({ env: {}, overrides: { 'gateway.providers': [provider] } }).gateway.providers[0]!.kind, kind);
  }
  const err = t.throws(
    () =>
      loadSettings({ env: {}, overrides: { 'gateway.providers': [{ id: 'x', kind: 'gopher', baseUrl: 'http://a' }] } }),
    { instanceOf: SettingsError },
  );
  t.true(err!.message.includes(`must be one of [${PROVIDER_KINDS.join(', ')}]`), err!.message);
});
