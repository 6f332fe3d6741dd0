import { $, el, replace, later, api, failureOf, setBusy, showNotice, type Data } from './helpers.js';
import { plainMessage } from './plain-errors.js';
import { workspaceContext, say, sessionEnded, secretOnce } from './sections-shared.js';
import type { IntegrationKind } from '../../integrations/kinds.js';
/**
 * The integrations section's "Set up" card in the browser: the settings of the kind chosen, sent
 * with PUT /api/w/{wid}/integrations/{kind}; then the secret svc made (shown once, with Copy) and
 * the address to paste into the other system, with what that system calls it. The list above is
 * read again after each save.
 */
interface Field {
  id: string;
  label: string;
  hint?: string;
  secret?: boolean;
  /** The body's member it fills. */
  member: string;
}

/**
 * How to see a first event arrive: the chat relay's is sent from here (svc is the sender); the
 * other systems send their own test events.
 */
const TRY: Record<string, string> = {
  issuer: 'Ask your card issuer to send a test event: it appears above as taken or refused.',
  stripe:
    'In Stripe, open the endpoint and send a test webhook (or run stripe trigger): a refused one is counted above.',
  github: 'GitHub sends a ping when the webhook is added; Recent Deliveries shows svc’s answer.',
  slack: 'Press a button on an approval card in Slack: a refused click is counted above.',
  ssf: 'Have your identity provider send a verification event to this receiver.',
  acp: 'Ask the merchant to send an order event: it is in the ledger as acp.order_create or acp.order_update.',
};

const KINDS: Record<string, { name: string; fields: Field[]; generated: boolean; paste: string }> = {
  issuer: {
    name: 'Card issuer',
    fields: [],
    generated: true,
    paste: 'Give your card issuer this address for its webhooks, and the secret to sign them with (svc-signature).',
  },
  acp: {
    name: 'Merchant checkout events (ACP)',
    fields: [],
    generated: true,
    paste:
      'Give the merchant this address for its order webhooks, and the secret to sign them with (Merchant-Signature).',
  },
  stripe: {
    name: 'Stripe',
    fields: [
      {
        id: 'signing-secret',
        label: 'Signing secret',
        hint: 'From Stripe: Developers, Webhooks, your endpoint, Signing secret (whsec_…).',
        secret: true,
        member: 'signingSecret',
      },
    ],
    generated: false,
    paste: 'In Stripe, add a webhook endpoint with this address (Developers, Webhooks, Add endpoint).',
  },
  github: {
    name: 'GitHub',
    fields: [
      {
        id: 'api-url',
        label: 'API address (optional)',
        hint: 'GitHub Enterprise Server: https://host/api/v3. Empty: api.github.com.',
        member: 'apiUrl',
      },
      {
        id: 'token',
        label: 'Token that may review deployments (optional)',
        hint: 'Sealed; never shown again.',
        secret: true,
        member: 'token',
      },
    ],
    generated: true,
    paste:
      'In GitHub, add a webhook (Settings, Webhooks) with this Payload URL, content type application/json, and the secret below.',
  },
  slack: {
    name: 'Slack',
    fields: [
      {
        id: 'signing-secret',
        label: 'Signing secret',
        hint: 'From your Slack app: Basic Information, Signing Secret.',
        secret: true,
        member: 'signingSecret',
      },
      {
        id: 'team-id',
        label: 'Team id (optional)',
        hint: 'T0123ABCD: only this workspace’s clicks.',
        member: 'teamId',
      },
    ],
    generated: false,
    paste: 'In your Slack app, set Interactivity’s Request URL to this address.',
  },
  'chat-relay': {
    name: 'Chat relay',
    fields: [{ id: 'url', label: 'Relay address', hint: 'Where svc sends approval cards.', member: 'url' }],
    generated: true,
    paste: 'Your relay sends the buttons people press to this address, signed with the secret below.',
  },
  ssf: {
    name: 'Identity provider',
    fields: [
      { id: 'issuer', label: 'Issuer', hint: 'As the provider’s tokens name it (iss).', member: 'issuer' },
      { id: 'audience', label: 'Audience', hint: 'As the provider addresses svc (aud).', member: 'audience' },
      { id: 'jwks-uri', label: 'Keys address (JWKS URI)', hint: 'Its public keys, https://…', member: 'jwksUri' },
    ],
    generated: false,
    paste: 'In your identity provider, add a Shared Signals receiver (push delivery) with this address.',
  },
} satisfies Record<IntegrationKind, { name: string; fields: Field[]; generated: boolean; paste: string }>;

export function section_integrations_setup() {
  const ctx = workspaceContext();
  const form = $<HTMLFormElement>('#integration-form');
  const kindSelect = $<HTMLSelectElement>('#integration-kind');
  const result = $('#integration-result');

  function hookUrl(kind: string): string {
    return window.location.origin + '/v1/hooks/' + kind + (kind === 'slack' ? '' : '/' + encodeURIComponent(ctx.wid));
  }

  function renderFields() {
    const kind = KINDS[kindSelect.value]!;
    // The settings and Save need the chosen kind's permission (owners only for some kinds).
    const chosen = kindSelect.selectedOptions[0];
    if (chosen && chosen.dataset.permission) form.dataset.permission = chosen.dataset.permission;
    replace(
      $('#integration-fields'),
      kind.fields.map(function (f) {
        return el(
          'div',
          { class: 'field' },
          el('label', { for: 'integration-' + f.id, text: f.label }),
          el('input', {
            id: 'integration-' + f.id,
            type: f.secret ? 'password' : 'text',
            autocomplete: 'off',
            'data-member': f.member,
          }),
          f.hint ? el('p', { class: 'hint', text: f.hint }) : null,
        );
      }),
      kind.generated
        ? el(
            'label',
            { class: 'check' },
            el('input', { type: 'checkbox', id: 'integration-rotate' }),
            ' Make a new secret (if it is set up already: the old one keeps working for 24 hours)',
          )
        : null,
    );
  }

  function pasteBox(kind: string): HTMLElement {
    const address = hookUrl(kind);
    const field = el('input', {
      type: 'text',
      readonly: true,
      class: 'mono secret-value',
      id: 'integration-hook-url',
      value: address,
      'aria-label': 'The address to paste',
    });
    const copy = el('button', { type: 'button', class: 'button', text: 'Copy' });
    copy.addEventListener(
      'click',
      later(async function () {
        field.select();
        try {
          await navigator.clipboard.writeText(address);
          copy.textContent = 'Copied';
        } catch {
          copy.textContent = 'Press Ctrl+C';
        }
      }),
    );
    return el(
      'div',
      { class: 'secret', id: 'integration-paste' },
      el('p', { class: 'secret-title', text: KINDS[kind]!.paste }),
      el('div', { class: 'secret-row' }, field, copy),
      kind === 'chat-relay' ? testCard() : el('p', { class: 'hint', text: TRY[kind] ?? '' }),
    );
  }

  /** The chat relay's test card: svc sends it, signed, to the relay's address. */
  function testCard(): HTMLElement {
    const line = el('span', { class: 'muted', id: 'integration-test-result', role: 'status' });
    const send = el('button', {
      type: 'button',
      class: 'button',
      id: 'integration-test',
      text: 'Send a test card',
      'data-permission': 'integrations.approvalChannels',
    });
    send.addEventListener(
      'click',
      later(async function () {
        setBusy([send], true);
        line.textContent = '';
        try {
          const answer = await api('POST', ctx.base + '/integrations/chat-relay/test', {});
          line.textContent = 'Sent to ' + answer.url + ': it appears in your chat once the relay posts it.';
        } catch (caught) {
          const err = failureOf(caught);
          if (sessionEnded(err)) return;
          line.textContent = plainMessage(err.message);
        } finally {
          setBusy([send], false);
        }
      }),
    );
    return el('div', { class: 'inline-form' }, send, line);
  }

  kindSelect.addEventListener('change', function () {
    replace(result);
    showNotice($('#integration-error'), '');
    renderFields();
  });

  form.addEventListener(
    'submit',
    later(async function (event) {
      event.preventDefault();
      const kind = kindSelect.value;
      const error = $('#integration-error');
      const payload: Record<string, unknown> = {};
      form.querySelectorAll<HTMLInputElement>('#integration-fields input[data-member]').forEach(function (input) {
        const value = input.value.trim();
        if (value) payload[input.dataset.member!] = value;
      });
      const rotate = form.querySelector<HTMLInputElement>('#integration-rotate');
      if (rotate && rotate.checked) payload.rotate = true;
      const save = $<HTMLButtonElement>('#integration-save');
      showNotice(error, '');
      setBusy([save], true);
      try {
        const answer: Data = await api('PUT', ctx.base + '/integrations/' + encodeURIComponent(kind), payload);
        form.querySelectorAll<HTMLInputElement>('#integration-fields input[type=password]').forEach(function (i) {
          i.value = '';
        });
        if (rotate) rotate.checked = false;
        say(KINDS[kind]!.name + ' saved.');
        replace(
          result,
          pasteBox(kind),
          answer.secret
            ? secretOnce('Secret of the ' + KINDS[kind]!.name.toLowerCase() + ' integration', answer.secret)
            : null,
        );
        $('#refresh').click();
      } catch (caught) {
        const err = failureOf(caught);
        if (sessionEnded(err)) return;
        showNotice(error, plainMessage(err.message));
      } finally {
        setBusy([save], false);
      }
    }),
  );

  renderFields();
}
