import { spawnSync } from 'node:child_process';
import test from 'ava';
import parsePrometheusTextFormat, { type ParsedFamily } from 'parse-prometheus-text-format';
import { createAgent, authorize, payment } from '../helpers/gate.js';
import { assertError, bearer, call } from '../helpers/http.js';
import { startMockVendor, type MockVendor } from '../helpers/mock-vendor.js';
import { inProcessServer } from '../helpers/in-process.js';
import { startServer, stopAndClean, type RunningServer } from '../helpers/process.js';
import { startGateway, user, type Gateway } from '../gateway/support.js';

/**
 * GET /metrics (issue 21): off unless a scrape token is set (bearer, 401 without it or
 * with another) or --metrics-port opens a 127.0.0.1 listener without a token. The exposition is
 * parsed with a real Prometheus text-format parser; the series the issue lists are there, with
 * values that follow what the server did, and no label holds an id of an agent, key or workspace.
 */
const TOKEN = 'scrape-token-0123456789abcdef';
let vendor: MockVendor;
let gw: Gateway;

test.before(async () => {
  vendor = await startMockVendor();
  gw = await startGateway(vendor, {}, { SVC_METRICS_TOKEN: TOKEN });
});

test.after.always(async () => {
  if (gw) await stopAndClean(gw.server);
  await vendor?.close();
});

const scrape = async (url: string, headers: Record<string, string> = {}) => {
  const res = await fetch(url, { headers });
  return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
};

const family = (families: ParsedFamily[], name: string): ParsedFamily => {
  const found = families.find((f) => f.name === name);
  if (!found) throw new Error(`no ${name} in the exposition`);
  return found;
};
const sample = (f: ParsedFamily, labels: Record<string, string>) =>
  f.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
const matches = (have: Record<string, string>, want: Record<string, string>) =>
  Object.entries(want).every(([k, v]) => have[k] === v);
/**
 * The observation count of a labelled histogram series. The parser keeps the buckets of a
 * histogram but folds away the labels of `_count` and `_sum` (it reads unlabelled histograms
 * only), so the count is read from the `_count` samples of the text the parser accepted.
 */
function histogramCount(text: string, name: string, want: Record<string, string>): number {
  let total = 0;
  for (const line of text.split('\n')) {
    const m = new RegExp(`^${name}_count\\{([^}]*)\\} (\\S+)$`).exec(line);
    if (!m) continue;
    const labels = Object.fromEntries([...m[1]!.matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1]!, l[2]!]));
    if (matches(labels, want)) total += Number(m[2]);
  }
  return total;
}

test.serial('without the scrape token, or with another, GET /metrics is 401 and shows nothing', async (t) => {
  const none = await call(gw.server.url, 'GET', '/metrics');
  assertError(t, none, 401, 'unauthenticated');
  t.regex(String(none.headers['www-authenticate']), /^Bearer/);
  const wrong = await call(gw.server.url, 'GET', '/metrics', { headers: bearer(`${TOKEN}x`) });
  assertError(t, wrong, 401, 'unauthenticated');
  t.false(wrong.text.includes('svc_'));
});

test.serial('the exposition parses and holds the series of what the server did, with bounded labels', async (t) => {
  const server = gw.server;
  // One allowed payment, one denied (over the mandate's maximum), one gateway call.
  const agent = await createAgent(server);
  t.is((await authorize(server, agent.key, payment(1000))).status, 200);
  const denied = await authorize(server, agent.key, payment(900_000));
  t.is(denied.body.decision, 'deny');
  const key = await gw.key({ defaultTaskClass: 'general', policyProfile: 'us-only' });
  const answer = await gw.openai(key).chat.completions.create({ model: 'small', messages: user('hello') });
  t.is(answer.choices[0]!.message.content, 'echo: hello');

  const res = await scrape(`${server.url}/metrics`, bearer(TOKEN));
  t.is(res.status, 200);
  t.regex(String(res.type), /^text\/plain; version=0\.0\.4/);
  const families = parsePrometheusTextFormat(res.text);

  const decisions = family(families, 'svc_gate_decisions_total');
  t.is(decisions.type, 'COUNTER');
  t.is(Number(sample(decisions, { decision: 'allow', signal: 'none' })?.value), 1);
  const deniedSample = decisions.metrics.find((m) => m.labels?.decision === 'deny');
  t.truthy(deniedSample, 'the denial is counted under its signal');
  t.is(deniedSample!.labels!.signal, denied.body.signals[0]);

  const authorizeLatency = family(families, 'svc_authorize_duration_seconds');
  t.is(authorizeLatency.type, 'HISTOGRAM');
  t.is(histogramCount(res.text, 'svc_authorize_duration_seconds', { status: '2xx' }), 2);
  t.is(histogramCount(res.text, 'svc_gateway_request_duration_seconds', { route: '/v1/chat/completions' }), 1);
  t.is(family(families, 'svc_store_write_duration_seconds').type, 'HISTOGRAM');
  t.true(histogramCount(res.text, 'svc_store_write_duration_seconds', { outcome: 'ok' }) > 0);

  const requests = family(families, 'svc_gateway_requests_total');
  t.is(Number(sample(requests, { model: 'small', provider: 'vendor-o', outcome: 'ok' })?.value), 1);
  const tokens = family(families, 'svc_gateway_tokens_total');
  t.true(Number(sample(tokens, { model: 'small', direction: 'input' })?.value) > 0);
  t.true(Number(sample(tokens, { model: 'small', direction: 'output' })?.value) > 0);
  t.true(Number(sample(family(families, 'svc_gateway_cost_usd_total'), { model: 'small' })?.value) > 0);
  const upstream = family(families, 'svc_gateway_upstream_duration_seconds');
  t.is(upstream.type, 'HISTOGRAM');
  t.is(histogramCount(res.text, 'svc_gateway_upstream_duration_seconds', { model: 'small', result: 'json' }), 1);
  const circuits = family(families, 'svc_gateway_circuit_open');
  t.deepEqual(circuits.metrics.map((m) => [m.labels!.model, m.value]).sort(), [
    ['claude-eu', '0'],
    ['large', '0'],
    ['small', '0'],
  ]);

  // The two decisions' records: integrated already, or still waiting for the integrator.
  const ledgerRecords = ['svc_ledger_records', 'svc_ledger_waiting_records'].map((name) =>
    Number(family(families, name).metrics[0]!.value),
  );
  t.true(ledgerRecords[0]! + ledgerRecords[1]! >= 2);
  t.is(family(families, 'svc_ledger_integration_lag_seconds').type, 'HISTOGRAM');
  t.true(Number(family(families, 'svc_ledger_max_merge_delay_seconds').metrics[0]!.value) > 0);
  for (const name of [
    'svc_ledger_oldest_waiting_seconds',
    'svc_ledger_seconds_since_checkpoint',
    'svc_approvals_waiting',
    'svc_agents_stopped',
    'svc_stop_all_active',
    'svc_webhook_outbox_depth',
    'svc_webhook_outbox_oldest_seconds',
  ])
    t.is(family(families, name).type, 'GAUGE', name);
  for (const name of [
    'svc_gateway_budget_steps_total',
    'svc_gateway_data_loss_findings_total',
    'svc_mcp_calls_total',
    'svc_webhook_delivery_attempts_total',
    'svc_oauth_grants_total',
  ])
    t.is(family(families, name).type, 'COUNTER', name);
  t.true(Number(family(families, 'svc_process_resident_memory_bytes').metrics[0]!.value) > 0);
  t.truthy(family(families, 'svc_nodejs_eventloop_lag_p99_seconds'));

  // No label anywhere holds an id the product mints (agents, keys, workspaces, requests).
  const values = families.flatMap((f) => f.metrics.flatMap((m) => Object.values(m.labels ?? {})));
  const ids = values.filter((v) => /^(ag|agt|key|wk|ws|req|act|apr)_|^ask_|^sk-/.test(v));
  t.deepEqual(ids, []);
  t.false(res.text.includes(agent.agentId));
  t.false(res.text.includes(agent.wid));
});

test.serial("the exposition passes Prometheus's own lint (promtool check metrics)", async (t) => {
  const res = await scrape(`${gw.server.url}/metrics`, bearer(TOKEN));
  t.is(res.status, 200);
  const lint = spawnSync('promtool', ['check', 'metrics'], { input: res.text, encoding: 'utf8' });
  t.is(lint.error, undefined, 'promtool runs (Debian package prometheus)');
  t.is(lint.status, 0, `${lint.stdout}${lint.stderr}`);
  t.is(`${lint.stdout}${lint.stderr}`.trim(), '');
  t.regex(res.text, /^svc_nodejs_active_handles\{/m, 'the per-type gauges stay');
});

test.serial('the same counters move with the next decision', async (t) => {
  const read = async () => {
    const families = parsePrometheusTextFormat((await scrape(`${gw.server.url}/metrics`, bearer(TOKEN))).text);
    return Number(sample(family(families, 'svc_gate_decisions_total'), { decision: 'allow', signal: 'none' })?.value);
  };
  const before = await read();
  const agent = await createAgent(gw.server, undefined, 'second-bot');
  t.is((await authorize(gw.server, agent.key, payment(500))).status, 200);
  t.is(await read(), before + 1);
});

test('with neither a token nor --metrics-port, GET /metrics does not exist', async (t) => {
  const s = await inProcessServer();
  try {
    await s.http.server.initialize();
    const res = await s.http.server.inject({ url: '/metrics', headers: bearer(TOKEN) });
    t.is(res.statusCode, 404);
    t.is(JSON.parse(res.payload).error.type, 'route_not_found');
    t.is(s.http.metricsUrl(), null);
  } finally {
    await s.close();
  }
});

test('--metrics-port serves /metrics without a token on 127.0.0.1 only; the main listener has none', async (t) => {
  let server: RunningServer | undefined;
  try {
    server = await startServer({ args: ['--metrics-port', '0'] });
    const url = (server.boot as { metrics?: string }).metrics;
    t.regex(String(url), /^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    const res = await scrape(url!);
    t.is(res.status, 200);
    const families = parsePrometheusTextFormat(res.text);
    t.is(family(families, 'svc_approvals_waiting').metrics[0]!.value, '0');
    t.is((await fetch(url!.replace('/metrics', '/healthz'))).status, 404);
    t.is((await fetch(url!, { method: 'POST' })).status, 405);
    assertError(t, await call(server.url, 'GET', '/metrics'), 404, 'route_not_found');
  } finally {
    await stopAndClean(server);
  }
});

test('a scrape token shorter than 16 characters stops the start with a message naming the setting', async (t) => {
  const { loadSettings } = await import('../../src/settings/load.js');
  const err = t.throws(() => loadSettings({ env: { SVC_METRICS_TOKEN: 'short' } }));
  t.regex(String(err?.message), /observability\.metricsToken/);
  t.false(String(err?.message).includes('short"'));
});
