import { usd } from './text.js';
import { keepFresh } from './console-page.js';
import { body, $, find, el, api, later, time, type Data } from './helpers.js';
import { submitForm, loadPart, drawList } from './sections-shared.js';
/**
 * The budgets section (/console/budgets): each budget's scope, period and amount, what it used
 * of this period (a meter element: no style attribute needed), its ladder with the step reached
 * marked, and, for owners and admins, the form that sets a new one (POST /api/w/{wid}/budgets;
 * the API's invalid_budget message is shown beside it). Amounts use usd() of section-usage.ts.
 */
export function section_budgets() {
  const base = '/api/w/' + encodeURIComponent(body.dataset.workspace ?? '');
  const state: { pending: number } = { pending: 0 };
  const form = find<HTMLFormElement>('#budget-form');
  const STEP_TEXT: Record<string, string> = {
    nudge: 'Nudge',
    downgrade: 'Downgrade',
    approval: 'Approval',
    block: 'Block',
  };
  const SCOPE_TEXT: Record<string, string> = {
    workspace: 'Whole workspace',
    team: 'Team',
    principal: 'Principal',
    key: 'Key',
    agent: 'Agent',
  };

  function load() {
    return loadPart(state, 'budgets', async function () {
      render((await api('GET', base + '/budgets')).data);
    });
  }

  function pct(share: Data) {
    return Math.round(share * 1000) / 10 + '%';
  }

  function render(list: Data) {
    drawList(
      'budgets',
      list,
      el('p', {
        class: 'empty',
        id: 'budgets-empty',
        text: 'No budgets yet: model traffic is limited only by the plan.',
      }),
      function () {
        return el('ul', { class: 'budgets', id: 'budget-list' }, list.map(budgetItem));
      },
    );
  }

  function budgetItem(b: Data) {
    const scope = b.scope.kind === 'workspace' ? SCOPE_TEXT.workspace : SCOPE_TEXT[b.scope.kind] + ' ' + b.scope.id;
    const steps = b.ladder.slice().sort(function (x: Data, y: Data) {
      return x.at - y.at;
    });
    const ladder = el(
      'ol',
      { class: 'ladder' },
      steps.map(function (r: Data) {
        const reached = b.share >= r.at;
        const current = b.step === r.step;
        return el(
          'li',
          {
            class: 'rung' + (reached ? ' reached' : '') + (current ? ' current' : ''),
            data: { step: r.step },
            'aria-current': current ? 'step' : null,
          },
          el('span', { class: 'rung-at', text: pct(r.at) }),
          ' ',
          el('span', { text: STEP_TEXT[r.step] || r.step }),
        );
      }),
    );
    const stepBadge = b.step
      ? el('span', {
          class: 'badge ' + (b.step === 'block' || b.step === 'approval' ? 'badge-danger' : 'badge-warn'),
          text: 'Step: ' + (STEP_TEXT[b.step] || b.step),
        })
      : el('span', { class: 'badge badge-ok', text: 'Below every step' });
    return el(
      'li',
      { class: 'budget', data: { budget: b.id } },
      el(
        'div',
        { class: 'budget-head' },
        el('div', {}, el('div', { class: 'item-title', text: scope }), el('div', { class: 'muted mono', text: b.id })),
        stepBadge,
      ),
      el(
        'div',
        { class: 'budget-use' },
        el('meter', {
          min: '0',
          max: '1',
          low: '0.5',
          high: '0.8',
          optimum: '0',
          value: String(Math.min(b.share, 1)),
          'aria-label': 'Share used',
        }),
        el('span', {
          class: 'budget-figures',
          text: usd(b.usedMicros) + ' of ' + usd(b.amountMicros) + ' this ' + b.period + ' (' + pct(b.share) + ')',
        }),
      ),
      el(
        'div',
        { class: 'item-meta' },
        el('span', {}, 'Period started ' + b.periodStart + ', ends ', time(b.periodEnd)),
        b.reservedMicros ? el('span', { text: usd(b.reservedMicros) + ' reserved by calls under way' }) : null,
      ),
      ladder,
    );
  }

  if (form) {
    form.addEventListener(
      'submit',
      later(async function (event) {
        event.preventDefault();
        const button = $<HTMLButtonElement>('#budget-create');
        const kind = $<HTMLInputElement>('#budget-kind').value;
        const dollars = Number($<HTMLInputElement>('#budget-amount').value);
        const ladder: Data[] = [];
        form.querySelectorAll<HTMLInputElement>('input[data-step]').forEach(function (input) {
          if (input.value.trim() !== '') ladder.push({ at: Number(input.value) / 100, step: input.dataset.step });
        });
        const payload: Record<string, unknown> = {
          scope: {
            kind: kind,
            id: kind === 'workspace' ? body.dataset.workspace : $<HTMLInputElement>('#budget-scope-id').value.trim(),
          },
          amountMicros: Math.round(dollars * 1e6),
          period: $<HTMLInputElement>('#budget-period').value,
          ladder: ladder,
        };
        // The button stays busy until the list shows the new budget.
        await submitForm(
          state,
          $('#budget-error'),
          [button],
          'POST',
          base + '/budgets',
          payload,
          async function (made: Data) {
            $('#status').textContent =
              'Budget set for ' + (kind === 'workspace' ? 'the whole workspace' : kind + ' ' + made.scope.id) + '.';
            $<HTMLInputElement>('#budget-scope-id').value = '';
            $<HTMLInputElement>('#budget-amount').value = '';
            await load();
          },
        );
      }),
    );
  }
  keepFresh(load, function () {
    return state.pending > 0;
  });
}
