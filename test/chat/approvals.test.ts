import test, { type ExecutionContext } from 'ava';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import {
  about,
  agentView,
  findApproval,
  makeBot,
  pendingPayment,
  reviewRule,
  SERVER_ENV,
  staff,
  verifiedClaims,
  type Staff,
} from '../approvals/support.js';
import { expectStatus, otherWorkspace, type Person } from '../helpers/console.js';
import { assertError, bearer, call, type Json, type Reply } from '../helpers/http.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { poll } from '../helpers/wait.js';

/**
 * Approvals decided from chat (issue 8): an approval requested posts a signed card to the chat
 * relay (two button tokens); a click, from the relay (`svc-signature`, relay secret) or from Slack
 * (v0 signature), by a chat user an owner mapped to a member, is decided exactly as the console
 * decides it for that member; unknown tokens, unmapped users, replays and bad signatures change
 * nothing. Signatures here are made by the published schemes with node:crypto.
 */
const FAST = {
  ...SERVER_ENV,
  SVC_WEBHOOKS_ALLOW_PRIVATE_TARGETS: '1',
  SVC_WEBHOOKS_TIMEOUT_MS: '500',
  SVC_WEBHOOKS_BACKOFF_BASE_MS: '100',
  SVC_WEBHOOKS_BACKOFF_MAX_MS: '300',
  SVC_WEBHOOKS_DISPATCH_INTERVAL_MS: '50',
  SVC_WEBHOOKS_GIVE_UP_AFTER_MS: '120000',
  // A token freezing more than one agent at once waits for a person: that approval gets a card too.
  SVC_BULK_FREEZE_CEILING: '1',
};
const SLACK_SECRET = 'slack-signing-secret-0123456789abcdef';
const PLATFORM = 'teams';

interface Card {
  raw: string;
  verified: boolean;
  eventId: string;
  eventType: string;
  body: Json;
}

/** The chat relay on loopback: keeps every card, checking its svc-signature with the relay secret. */
async function startRelay(secret: () => string) {
  const cards: Card[] = [];
  const http: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const header = String(req.headers['svc-signature'] ?? '');
      const t = /t=(\d+)/.exec(header)?.[1] ?? '';
      const v1 = /v1=([0-9a-f]{64})/.exec(header)?.[1] ?? '';
      const expected = createHmac('sha256', secret()).update(`${t}.${raw}`).digest();
      const verified =
        v1.length === 64 &&
        timingSafeEqual(expected, Buffer.from(v1, 'hex')) &&
        Math.abs(Date.now() / 1000 - Number(t)) < 300;
      cards.push({
        raw,
        verified,
        eventId: String(req.headers['svc-event-id']),
        eventType: String(req.headers['svc-event-type']),
        body: JSON.parse(raw),
      });
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  return {
    cards,
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/cards`,
    close: () =>
      new Promise<void>((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
}

let server: ServedInProcess;
let people: Staff;
let owner: Person;
let wid: string;
let relaySecret = '';
let relay: Awaited<ReturnType<typeof startRelay>>;

let other: Person | undefined;
/** A second workspace on the same server, made once. */
const theOther = async (): Promise<Person> => (other ??= await otherWorkspace(server));

const now = () => Math.floor(Date.now() / 1000);

/** svc-signature: t=<unix>,v1=HMAC-SHA256(secret, "<t>.<raw body>"). */
const svcSign = (secret: string, body: string, t = now()) =>
  `t=${t},v1=${createHmac('sha256', secret).update(`${t}.${body}`).digest('hex')}`;
/** Slack v0: v0=HMAC-SHA256(signing secret, "v0:<timestamp>:<raw body>"). */
const slackSign = (secret: string, body: string, ts: string) =>
  `v0=${createHmac('sha256', secret).update(`v0:${ts}:${body}`).digest('hex')}`;

const relayPost = (body: string, headers: Record<string, string>, w = wid): Promise<Reply> =>
  call(server.url, 'POST', `/v1/hooks/chat-relay/${w}`, {
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });
/** A relay click, signed afresh with the relay secret. */
function relayClick(token: string, chatUserId: string, extra: Record<string, unknown> = {}): Promise<Reply> {
  const body = JSON.stringify({ token, user: { platform: PLATFORM, id: chatUserId }, ...extra });
  return relayPost(body, { 'svc-signature': svcSign(relaySecret, body) });
}

const slackPost = (body: string, headers: Record<string, string>): Promise<Reply> =>
  call(server.url, 'POST', '/v1/hooks/slack', {
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body,
  });
/** A Slack block_actions body, as Slack sends it: form-encoded, the interaction JSON in `payload`. */
function slackBody(token: string, userId: string, actionId: 'approve' | 'deny' = 'approve', team = 'T0001'): string {
  const payload = {
    type: 'block_actions',
    user: { id: userId, username: 'someone', team_id: team },
    team: { id: team, domain: 'example' },
    api_app_id: 'A0001',
    container: { type: 'message' },
    trigger_id: '1.2.3',
    response_url: 'https://hooks.slack.invalid/actions/1',
    actions: [{ type: 'button', action_id: actionId, block_id: 'b1', value: token, action_ts: `${now()}.000100` }],
  };
  return new URLSearchParams({ payload: JSON.stringify(payload) }).toString();
}
function slackClick(token: string, userId: string, actionId: 'approve' | 'deny' = 'approve'): Promise<Reply> {
  const body = slackBody(token, userId, actionId);
  const ts = String(now());
  return slackPost(body, { 'x-slack-signature': slackSign(SLACK_SECRET, body, ts), 'x-slack-request-timestamp': ts });
}

/** The card the relay received for an approval (waits for the outbox to send it). */
async function cardFor(approvalId: string): Promise<Card> {
  const card = await poll(
    () => relay.cards.find((c) => c.body.approval?.id === approvalId),
    (found) => found !== undefined,
    { timeoutMs: 15_000 },
  );
  if (card) return card;
  throw new Error(`no card for ${approvalId}; the card log: ${(await owner.get('/chat/cards')).text}`);
}
const tokenOf = (card: Card, decision: 'approve' | 'deny'): string =>
  card.body.buttons.find((b: { decision: string }) => b.decision === decision).token;

/** What a refused click must leave as it was: the ledger's length and the approval. */
async function snapshot(approvalId: string): Promise<string> {
  const ledger = await owner.ledger();
  const approval = await findApproval(owner, approvalId);
  return JSON.stringify({ ledger: ledger.length, approval });
}

/** A payment waiting for a person under `rule`, for an agent acting for `actsFor`, and its card. */
async function waiting(t: ExecutionContext, name: string, rule = reviewRule(), actsFor?: string) {
  const bot = await makeBot(owner, name, [rule], actsFor);
  const action = await pendingPayment(t, server, bot);
  const card = await cardFor(action.approvalId);
  return { bot, action, card };
}

test.before(async () => {
  relay = await startRelay(() => relaySecret);
  server = await serveInProcess({ env: FAST });
  people = await staff(server);
  owner = people.owner;
  wid = server.boot.workspaceId!;
  const relaySetup = expectStatus(
    await owner.send('PUT', '/integrations/chat-relay', { url: relay.url }),
    200,
    'relay',
  );
  relaySecret = relaySetup.body.secret;
  expectStatus(await owner.send('PUT', '/integrations/slack', { signingSecret: SLACK_SECRET }), 200, 'slack');
  // Each person maps their own chat identity.
  for (const [id, person] of [
    ['owner', people.owner],
    ['admin', people.admin],
    ['member', people.member],
    ['other', people.otherMember],
  ] as const) {
    expectStatus(await person.send('PUT', `/chat/users/${PLATFORM}/u-${id}`, { userId: person.id }), 200, `map ${id}`);
  }
  expectStatus(
    await people.admin.send('PUT', '/chat/users/slack/UADMIN', { userId: people.admin.id }),
    200,
    'map slack admin',
  );
});

test.after.always(async () => {
  await stopAndClean(server);
  await relay.close();
});

test.serial(
  'each person maps only their own chat identity; owners and admins see and remove mappings; only owners set the channels up',
  async (t) => {
    const listed = expectStatus(await owner.get('/chat/users'), 200, 'list');
    t.true(
      listed.body.data.some(
        (u: { platform: string; chatUserId: string; userId: string }) =>
          u.platform === PLATFORM && u.chatUserId === 'u-admin' && u.userId === people.admin.id,
      ),
    );
    const own = expectStatus(await people.member.get('/chat/users'), 200, 'own list');
    t.deepEqual(
      own.body.data.map((u: { userId: string }) => u.userId),
      [people.member.id],
      'a member sees only their own mappings',
    );
    const before = (await owner.ledger()).length;
    // Nobody, an admin included, makes a chat identity speak for someone else.
    const impersonate = await people.admin.send('PUT', `/chat/users/${PLATFORM}/u-fake-owner`, {
      userId: people.owner.id,
    });
    assertError(t, impersonate, 403, 'forbidden');
    t.regex(impersonate.body.error.message, /only their own chat identity/);
    // Nor takes one mapped to another person.
    assertError(
      t,
      await people.member.send('PUT', `/chat/users/${PLATFORM}/u-admin`, { userId: people.member.id }),
      403,
      'forbidden',
    );
    assertError(
      t,
      await people.member.send('PUT', `/chat/users/${PLATFORM}/u-admin`, { userId: null }),
      403,
      'forbidden',
    );
    assertError(
      t,
      await people.analyst.send('PUT', `/chat/users/${PLATFORM}/u-x`, { userId: people.analyst.id }),
      403,
      'forbidden',
    );
    assertError(
      t,
      await owner.send('PUT', `/chat/users/${PLATFORM}/u-x`, { userId: 'nobody' }),
      400,
      'invalid_request',
    );
    t.is((await owner.ledger()).length, before, 'refusals change nothing');
    // Only owners set up the channels whose secrets speak for people.
    assertError(t, await people.admin.send('PUT', '/integrations/chat-relay', { rotate: true }), 403, 'forbidden');
    assertError(
      t,
      await people.admin.send('PUT', '/integrations/slack', { signingSecret: 'another-secret-value' }),
      403,
      'forbidden',
    );

    const mapped = expectStatus(
      await people.otherMember.send('PUT', `/chat/users/${PLATFORM}/u-temp`, { userId: people.otherMember.id }),
      200,
      'map',
    );
    t.like(mapped.body, { platform: PLATFORM, chatUserId: 'u-temp', userId: people.otherMember.id });
    t.deepEqual(
      expectStatus(await people.admin.send('PUT', `/chat/users/${PLATFORM}/u-temp`, { userId: null }), 200, 'unmap')
        .body,
      { platform: PLATFORM, chatUserId: 'u-temp', userId: null },
    );
    const records = (await owner.ledger()).filter(
      (r) => r.kind === 'chat.user_mapped' && r.subject === `${PLATFORM}:u-temp`,
    );
    t.deepEqual(
      records.map((r) => r.data.userId),
      [people.otherMember.id, null],
    );
  },
);

test.serial(
  'an approval requested posts a signed card to the relay with two button tokens, stored nowhere',
  async (t) => {
    const { action, card } = await waiting(t, 'card-bot');
    t.true(card.verified, 'the card carries an svc-signature the relay verifies with its secret');
    t.is(card.eventType, 'approval.card');
    t.like(card.body, {
      type: 'approval.card',
      workspaceId: wid,
      approval: {
        id: action.approvalId,
        actionId: action.id,
        type: 'payment',
        summary: action.summary,
        payment: { amount: 3000, currency: 'EUR', merchant: 'acme.example' },
        requiredApprovals: 1,
        separationOfDuties: false,
        approvers: null,
      },
    });
    t.is(card.body.approval.agent.name, 'card-bot');
    t.regex(card.body.approval.whoMayDecide, /Owners and admins/);
    t.true(Date.parse(card.body.approval.expiresAt) > Date.now());
    t.true(card.body.answerTo.endsWith(`/v1/hooks/chat-relay/${wid}`));
    const [approve, deny] = [tokenOf(card, 'approve'), tokenOf(card, 'deny')];
    t.regex(approve, /^cbt_[A-Za-z0-9_-]{43}$/);
    t.regex(deny, /^cbt_[A-Za-z0-9_-]{43}$/);
    t.not(approve, deny);
    const buttons = card.body.slack.blocks.find((b: { type: string }) => b.type === 'actions').elements;
    t.deepEqual(
      buttons.map((b: { action_id: string; value: string }) => [b.action_id, b.value]),
      [
        ['approve', approve],
        ['deny', deny],
      ],
    );
    // Neither the card log nor the ledger holds a token.
    const log = expectStatus(await owner.get('/chat/cards'), 200, 'cards');
    t.true(
      log.body.data.some(
        (d: { eventId: string; status: string }) => d.eventId === card.eventId && d.status === 'delivered',
      ),
    );
    const everything = log.text + JSON.stringify(await owner.ledger());
    t.false(everything.includes(approve) || everything.includes(deny));
  },
);

test.serial(
  "a mapped member's approve click approves as the console would: the action is allowed with a hum:true receipt, and the ledger says it came from chat",
  async (t) => {
    const { bot, action, card } = await waiting(t, 'chat-approve-bot');
    const res = await relayClick(tokenOf(card, 'approve'), 'u-admin', { note: 'ok from chat' });
    t.is(res.status, 200, res.text);
    t.like(res.body, {
      decision: 'approve',
      approval: { id: action.approvalId, status: 'approved', decidedBy: `user:${people.admin.id}` },
    });
    const view = await agentView(server, bot, action.id);
    t.like(view.body, { decision: 'allow', status: 'allowed' });
    t.like(await verifiedClaims(server, view.body.receipt), { act: action.id, hum: true });
    const approved = (await about(owner, action.approvalId)).find((r) => r.kind === 'approval.approved');
    t.is(approved?.actor, `user:${people.admin.id}`);
    t.deepEqual(approved?.data.via, { channel: 'chat-relay', platform: PLATFORM, chatUserId: 'u-admin' });
    t.is(approved?.data.note, 'ok from chat');
    // Deciding it again from chat: already decided, nothing changes.
    const before = await snapshot(action.approvalId);
    assertError(t, await relayClick(tokenOf(card, 'deny'), 'u-owner'), 409, 'approval_closed');
    t.is(await snapshot(action.approvalId), before);
  },
);

test.serial('a deny click denies', async (t) => {
  const { bot, action, card } = await waiting(t, 'chat-deny-bot');
  const res = await relayClick(tokenOf(card, 'deny'), 'u-owner');
  t.is(res.status, 200, res.text);
  t.like(res.body, { decision: 'deny', approval: { status: 'denied' } });
  t.like((await agentView(server, bot, action.id)).body, {
    decision: 'deny',
    status: 'denied',
    signals: ['approval_denied'],
  });
  const denied = (await about(owner, action.approvalId)).find((r) => r.kind === 'approval.denied');
  t.like(denied, { actor: `user:${people.owner.id}`, data: { via: { channel: 'chat-relay', chatUserId: 'u-owner' } } });
});

test.serial(
  'the person the agent acts for is refused under separation of duties, exactly as the console refuses them',
  async (t) => {
    const { action, card } = await waiting(
      t,
      'chat-sod-bot',
      reviewRule({ separationOfDuties: true }),
      people.member.id,
    );
    const before = await snapshot(action.approvalId);
    const fromChat = await relayClick(tokenOf(card, 'approve'), 'u-member');
    assertError(t, fromChat, 403, 'separation_of_duties');
    const fromConsole = await people.member.send('POST', `/approvals/${action.approvalId}/approve`, {});
    assertError(t, fromConsole, 403, 'separation_of_duties');
    t.is(fromChat.body.error.message, fromConsole.body.error.message);
    t.is(await snapshot(action.approvalId), before);
    // Another member may not decide it either (not theirs), as in the console.
    assertError(t, await relayClick(tokenOf(card, 'approve'), 'u-other'), 403, 'forbidden');
    t.is(await snapshot(action.approvalId), before);
  },
);

test.serial('a two-person rule needs two clicks from different people; a replayed click changes nothing', async (t) => {
  const { bot, action, card } = await waiting(t, 'chat-two-bot', reviewRule({ count: 2 }));
  const body = JSON.stringify({ token: tokenOf(card, 'approve'), user: { platform: PLATFORM, id: 'u-admin' } });
  const signature = svcSign(relaySecret, body);
  const first = await relayPost(body, { 'svc-signature': signature });
  assertError(t, first, 409, 'second_person_required');
  t.is(first.body.error.approval.approvals.length, 1);
  const recorded = await snapshot(action.approvalId);
  assertError(t, await relayPost(body, { 'svc-signature': signature }), 401, 'unauthenticated');
  // The same signed request with another v1 added, or listed first: still a replay.
  assertError(
    t,
    await relayPost(body, { 'svc-signature': `${signature},v1=${'0'.repeat(64)}` }),
    401,
    'unauthenticated',
  );
  assertError(
    t,
    await relayPost(body, { 'svc-signature': signature.replace(/^t=(\d+),/, `t=$1,v1=${'1'.repeat(64)},`) }),
    401,
    'unauthenticated',
  );
  t.is(await snapshot(action.approvalId), recorded, 'the replay changed nothing');
  // The same click sent again by the relay, signed afresh (a distinct clickId, so not a replay).
  assertError(
    t,
    await relayClick(tokenOf(card, 'approve'), 'u-admin', { clickId: 'again' }),
    409,
    'second_person_required',
  );
  t.is(await snapshot(action.approvalId), recorded, 'the same person again changed nothing');
  t.like((await agentView(server, bot, action.id)).body, { decision: 'review' });
  const second = await relayClick(tokenOf(card, 'approve'), 'u-owner');
  t.is(second.status, 200, second.text);
  t.is(second.body.approval.status, 'approved');
  t.deepEqual(
    second.body.approval.approvals.map((a: { by: string }) => a.by),
    [people.admin.id, people.owner.id],
  );
  t.like((await agentView(server, bot, action.id)).body, { decision: 'allow' });
});

test.serial('an unmapped chat user, an unknown token and a token of another workspace change nothing', async (t) => {
  const { action, card } = await waiting(t, 'chat-refused-bot');
  const before = await snapshot(action.approvalId);
  const unmapped = await relayClick(tokenOf(card, 'approve'), 'u-stranger');
  assertError(t, unmapped, 403, 'forbidden');
  t.regex(unmapped.body.error.fix, /chat\/users/);
  assertError(t, await relayClick(`cbt_${'A'.repeat(43)}`, 'u-admin'), 404, 'not_found');
  assertError(t, await relayClick('not-a-token', 'u-admin'), 404, 'not_found');
  const bad = JSON.stringify({ token: tokenOf(card, 'approve'), user: { platform: 'Bad Platform', id: '' } });
  const invalid = await relayPost(bad, { 'svc-signature': svcSign(relaySecret, bad) });
  assertError(t, invalid, 400, 'invalid_request');
  t.deepEqual(invalid.body.error.errors.map((e: { field: string }) => e.field).sort(), ['user.id', 'user.platform']);
  assertError(t, await relayPost('nope', { 'svc-signature': svcSign(relaySecret, 'nope') }), 400, 'invalid_json');
  // Another workspace's relay, with its own secret and a mapping of its own, holding this card's token.
  const other = await theOther();
  const otherSecret = expectStatus(
    await other.send('PUT', '/integrations/chat-relay', { url: relay.url }),
    200,
    'other relay',
  ).body.secret as string;
  expectStatus(await other.send('PUT', `/chat/users/${PLATFORM}/u-admin`, { userId: other.id }), 200, 'other map');
  // Nor may the relay speak for a Slack user: Slack identities count only when Slack signs.
  assertError(
    t,
    await relayPost(JSON.stringify({ token: tokenOf(card, 'approve'), user: { platform: 'slack', id: 'UADMIN' } }), {}),
    401,
    'unauthenticated',
  );
  const asSlack = JSON.stringify({ token: tokenOf(card, 'approve'), user: { platform: 'slack', id: 'UADMIN' } });
  const slackRefused = await relayPost(asSlack, { 'svc-signature': svcSign(relaySecret, asSlack) });
  assertError(t, slackRefused, 403, 'forbidden');
  t.regex(slackRefused.body.error.message, /only when Slack itself signs/);
  const stolen = JSON.stringify({ token: tokenOf(card, 'approve'), user: { platform: PLATFORM, id: 'u-admin' } });
  assertError(
    t,
    await relayPost(stolen, { 'svc-signature': svcSign(otherSecret, stolen) }, other.wid),
    404,
    'not_found',
  );
  t.is(await snapshot(action.approvalId), before);
  t.is((await findApproval(owner, action.approvalId)).status, 'pending');
});

test.serial(
  'relay route: a wrong secret, a stale timestamp, a changed byte, a replay or no header is refused 401 and changes nothing',
  async (t) => {
    const { action, card } = await waiting(t, 'chat-sig-bot');
    const body = JSON.stringify({ token: tokenOf(card, 'deny'), user: { platform: PLATFORM, id: 'u-admin' } });
    const before = await snapshot(action.approvalId);
    assertError(
      t,
      await relayPost(body, { 'svc-signature': svcSign('whs_not-the-relay-secret', body) }),
      401,
      'unauthenticated',
    );
    assertError(
      t,
      await relayPost(body, { 'svc-signature': svcSign(relaySecret, body, now() - 301) }),
      401,
      'unauthenticated',
    );
    assertError(
      t,
      await relayPost(body.replace('u-admin', 'u-admio'), { 'svc-signature': svcSign(relaySecret, body) }),
      401,
      'unauthenticated',
    );
    assertError(t, await relayPost(body, {}), 401, 'unauthenticated');
    assertError(
      t,
      await relayPost(body, { 'svc-signature': svcSign(relaySecret, body) }, 'ws_0000000000000000000000'),
      401,
      'unauthenticated',
    );
    t.is(await snapshot(action.approvalId), before);
    t.is((await findApproval(owner, action.approvalId)).status, 'pending');

    const signature = svcSign(relaySecret, body);
    const valid = await relayPost(body, { 'svc-signature': signature });
    t.is(valid.status, 200, valid.text);
    t.is(valid.body.approval.status, 'denied');
    const after = await snapshot(action.approvalId);
    assertError(t, await relayPost(body, { 'svc-signature': signature }), 401, 'unauthenticated');
    t.is(await snapshot(action.approvalId), after, 'the replay changed nothing');
  },
);

test.serial(
  'a Slack click approves as the mapped member; refusals are told in a 200 body and change nothing',
  async (t) => {
    const { bot, action, card } = await waiting(t, 'slack-bot');
    const before = await snapshot(action.approvalId);
    const stranger = await slackClick(tokenOf(card, 'approve'), 'USTRANGER');
    t.is(stranger.status, 200, stranger.text);
    t.like(stranger.body, { ok: false, error: { type: 'forbidden' } });
    const mismatch = await slackClick(tokenOf(card, 'approve'), 'UADMIN', 'deny');
    t.like(mismatch.body, { ok: false, error: { type: 'invalid_request' } });
    const unknown = await slackClick(`cbt_${'B'.repeat(43)}`, 'UADMIN');
    t.like(unknown.body, { ok: false, error: { type: 'not_found' } });
    t.is(await snapshot(action.approvalId), before);

    const res = await slackClick(tokenOf(card, 'approve'), 'UADMIN');
    t.is(res.status, 200, res.text);
    t.like(res.body, { ok: true, decision: 'approve', approval: { id: action.approvalId, status: 'approved' } });
    t.like((await agentView(server, bot, action.id)).body, { decision: 'allow', status: 'allowed' });
    const approved = (await about(owner, action.approvalId)).find((r) => r.kind === 'approval.approved');
    t.like(approved, {
      actor: `user:${people.admin.id}`,
      data: { via: { channel: 'slack', platform: 'slack', chatUserId: 'UADMIN' } },
    });
  },
);

test.serial(
  'Slack route: a wrong secret, a stale timestamp, a changed byte, a replay or a missing header is refused 401 and changes nothing',
  async (t) => {
    const { action, card } = await waiting(t, 'slack-sig-bot');
    const body = slackBody(tokenOf(card, 'deny'), 'UADMIN', 'deny');
    const ts = String(now());
    const good = { 'x-slack-signature': slackSign(SLACK_SECRET, body, ts), 'x-slack-request-timestamp': ts };
    const before = await snapshot(action.approvalId);
    assertError(
      t,
      await slackPost(body, { ...good, 'x-slack-signature': slackSign('not-the-signing-secret', body, ts) }),
      401,
      'unauthenticated',
    );
    const stale = String(now() - 301);
    assertError(
      t,
      await slackPost(body, {
        'x-slack-signature': slackSign(SLACK_SECRET, body, stale),
        'x-slack-request-timestamp': stale,
      }),
      401,
      'unauthenticated',
    );
    assertError(t, await slackPost(body.replace('UADMIN', 'UADMIM'), good), 401, 'unauthenticated');
    assertError(t, await slackPost(body, { 'x-slack-request-timestamp': ts }), 401, 'unauthenticated');
    assertError(t, await slackPost(body, { 'x-slack-signature': good['x-slack-signature'] }), 401, 'unauthenticated');
    assertError(t, await slackPost(body, {}), 401, 'unauthenticated');
    t.is(await snapshot(action.approvalId), before);
    t.is((await findApproval(owner, action.approvalId)).status, 'pending');

    const valid = await slackPost(body, good);
    t.is(valid.status, 200, valid.text);
    t.like(valid.body, { ok: true, decision: 'deny', approval: { status: 'denied' } });
    const after = await snapshot(action.approvalId);
    assertError(t, await slackPost(body, good), 401, 'unauthenticated');
    t.is(await snapshot(action.approvalId), after, 'the replay changed nothing');
  },
);

test.serial('a signed Slack body that is not an interaction is refused 400 and changes nothing', async (t) => {
  const ledger = (await owner.ledger()).length;
  for (const body of [
    'payload=not-json',
    'nothing=here',
    `payload=${encodeURIComponent(JSON.stringify({ type: 'view_submission' }))}`,
  ]) {
    const ts = String(now());
    assertError(
      t,
      await slackPost(body, {
        'x-slack-signature': slackSign(SLACK_SECRET, body, ts),
        'x-slack-request-timestamp': ts,
      }),
      400,
      'invalid_request',
    );
  }
  t.is((await owner.ledger()).length, ledger);
});

test.serial(
  'whatever the Slack signature headers hold, the answer is 401, never a failure of the server',
  async (t) => {
    t.timeout(120_000);
    const header = fc.oneof(
      fc.string({ maxLength: 120 }),
      fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: 64, maxLength: 64 }).map((h) => `v0=${h}`),
      fc.integer({ min: -1e12, max: 1e13 }).map(String),
      fc.constant(String(now())),
    );
    await t.notThrowsAsync(
      fc.assert(
        fc.asyncProperty(
          fc.option(header, { nil: undefined }),
          fc.option(header, { nil: undefined }),
          async (signature, timestamp) => {
            const headers: Record<string, string> = {};
            if (signature !== undefined) headers['x-slack-signature'] = signature.replace(/[\r\n]/g, '');
            if (timestamp !== undefined) headers['x-slack-request-timestamp'] = timestamp.replace(/[\r\n]/g, '');
            const res = await slackPost(slackBody('cbt_x', 'UADMIN'), headers);
            return res.status === 401 && res.body?.error?.type === 'unauthenticated';
          },
        ),
        { numRuns: 80 },
      ),
    );
  },
);

test.serial(
  'a bulk freeze waiting for a person gets a card; only an owner or admin decides it from chat',
  async (t) => {
    const a = await makeBot(owner, 'freeze-a', [reviewRule()]);
    const b = await makeBot(owner, 'freeze-b', [reviewRule()]);
    const token = expectStatus(
      await owner.send('POST', '/service-tokens', { name: 'freezer', scopes: ['agents:freeze'], expiresInDays: 1 }),
      201,
      'token',
    ).body.token as string;
    const held = await call(server.url, 'POST', '/v1/admin/freezes', {
      headers: bearer(token),
      json: { selector: { agentIds: [a.agentId, b.agentId] }, reason: 'suspected leak', confirmCount: 2 },
    });
    t.is(held.status, 202, held.text);
    const card = await cardFor(held.body.approvalId);
    t.true(card.verified);
    t.like(card.body.approval, {
      type: 'freeze',
      agent: null,
      payment: null,
      whoMayDecide: 'Owners and admins.',
      freeze: { count: 2, reason: 'suspected leak' },
    });
    t.deepEqual([...card.body.approval.freeze.agentIds].sort(), [a.agentId, b.agentId].sort());

    const before = await snapshot(held.body.approvalId);
    assertError(t, await relayClick(tokenOf(card, 'approve'), 'u-member'), 403, 'forbidden');
    t.is(await snapshot(held.body.approvalId), before, "a member's click changes nothing");
    const approved = await relayClick(tokenOf(card, 'approve'), 'u-admin');
    t.is(approved.status, 200, approved.text);
    t.like(approved.body, { decision: 'approve', approval: { status: 'approved' } });
    for (const bot of [a, b]) t.is((await owner.get(`/agents/${bot.agentId}`)).body.status, 'stopped');
    const record = (await owner.ledger()).find(
      (r) => r.kind === 'approval.approved' && r.subject === held.body.approvalId,
    )!;
    t.like(record, {
      actor: `user:${people.admin.id}`,
      data: { freeze: true, via: { channel: 'chat-relay', platform: PLATFORM, chatUserId: 'u-admin' } },
    });
  },
);

test.serial(
  "a Slack request verified with this workspace's secret cannot decide another workspace's approval",
  async (t) => {
    const other = await theOther();
    // Its relay is set up (by the test before, or here): its cards reach the same relay.
    expectStatus(await other.send('PUT', '/integrations/chat-relay', { url: relay.url }), 200, 'other relay');
    expectStatus(await other.send('PUT', '/chat/users/slack/UADMIN', { userId: other.id }), 200, 'other map');
    const bot = await makeBot(other, 'other-slack-bot', [reviewRule()]);
    const action = await pendingPayment(t, server, bot);
    const card = await cardFor(action.approvalId);
    const before = JSON.stringify(await findApproval(other, action.approvalId));
    // Signed with this workspace's Slack secret (the other workspace has no Slack set up), carrying the other's token.
    const res = await slackClick(tokenOf(card, 'approve'), 'UADMIN');
    t.is(res.status, 200, res.text);
    t.like(res.body, { ok: false, error: { type: 'not_found' } });
    t.is(JSON.stringify(await findApproval(other, action.approvalId)), before);
  },
);

test.serial("a member's removal ends their chat identities: their clicks decide nothing after", async (t) => {
  const { addPerson } = await import('../approvals/support.js');
  const leaver = await addPerson(server, owner.wid, 'leaver@example.com', 'admin');
  expectStatus(await leaver.send('PUT', `/chat/users/${PLATFORM}/u-leaver`, { userId: leaver.id }), 200, 'map');
  expectStatus(await owner.send('DELETE', `/members/${leaver.id}`), 200, 'remove');
  t.false(
    (await owner.get('/chat/users')).body.data.some((u: { chatUserId: string }) => u.chatUserId === 'u-leaver'),
    'the mapping went with the membership',
  );
  const { action, card } = await waiting(t, 'leaver-bot');
  assertError(t, await relayClick(tokenOf(card, 'approve'), 'u-leaver'), 403, 'forbidden');
  t.is((await findApproval(owner, action.approvalId)).status, 'pending');
});
