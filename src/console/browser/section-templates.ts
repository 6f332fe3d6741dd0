import { keepFresh } from './console-page.js';
import { $, find, el, replace, later, showNotice, type Data } from './helpers.js';
import { plainMessage } from './plain-errors.js';
import { EMPTY_DRAFT, ruleOfDraft, rulePreview, type RuleDraft } from './rule-draft.js';
import { workspaceContext, say, listAll, loadPart, drawList, submitForm } from './sections-shared.js';
import type { MandateRule } from './text.js';
/**
 * The templates section (/console/templates) in the browser: the workspace's templates, each rule
 * as a plain sentence, and (owners, admins) the rule editor: each rule's fields, the problems the
 * page can see beside them, and a preview of what the rule allows that follows every keystroke.
 * Amounts are typed in the currency's units and sent in minor units (rule-draft.ts).
 */
export function section_templates() {
  const ctx = workspaceContext();
  const canManage = $('#templates-section').dataset.canManage === 'true';
  const state = { pending: 0 };
  /** The rules being written: each one's fields, as typed. */
  const drafts: RuleDraft[] = [{ ...EMPTY_DRAFT }];

  async function load() {
    await loadPart(state, 'templates', async function () {
      const list = await listAll(ctx.base + '/templates');
      drawList(
        'templates',
        list,
        el(
          'p',
          { class: 'empty', id: 'templates-empty' },
          canManage
            ? 'No templates yet. Write one below: agents get their mandates from templates.'
            : 'No templates yet: an owner or an admin writes them.',
        ),
        function (items) {
          return el('ul', { class: 'template-list' }, items.map(templateItem));
        },
      );
    });
  }

  function templateItem(tpl: Data): HTMLElement {
    return el(
      'li',
      { data: { template: tpl.id } },
      el('div', { class: 'item-title', text: tpl.name }),
      el('div', { class: 'muted mono small', text: tpl.id }),
      el(
        'ul',
        { class: 'plain' },
        (tpl.rules || []).map(function (r: MandateRule) {
          return el('li', { class: 'rule-sentence', text: rulePreview(r) });
        }),
      ),
    );
  }

  // -- the editor --

  const FIELDS: Array<{ key: keyof RuleDraft; label: string; hint: string; placeholder?: string }> = [
    { key: 'actions', label: 'Actions', hint: 'payment, refund, purchase, email…, a dotted type (crm.update) or *' },
    {
      key: 'merchants',
      label: 'Merchants',
      hint: 'Empty: only actions that name no merchant. *: any.',
      placeholder: 'acme.example',
    },
    { key: 'domains', label: 'Domains', hint: 'Empty: only actions that name no domain. *.x.com: its subdomains.' },
    { key: 'currency', label: 'Currency', hint: 'Three letters: EUR, USD, JPY…', placeholder: 'EUR' },
    {
      key: 'maxAmount',
      label: 'Largest amount',
      hint: 'In the currency’s units. Empty: no limit.',
      placeholder: '50.00',
    },
    { key: 'approvalAbove', label: 'A person approves above', hint: 'Empty: nobody is asked.', placeholder: '20.00' },
    { key: 'periodAmount', label: 'At most, in a period', hint: 'Empty: no period limit.', placeholder: '200.00' },
  ];

  function ruleEditor(index: number): HTMLElement {
    const draft = drafts[index]!;
    const prefix = 'rule-' + index + '-';
    const problems: Partial<Record<keyof RuleDraft, HTMLElement>> = {};
    const preview = el('p', { class: 'rule-preview', id: prefix + 'preview', 'aria-live': 'polite' });
    function refresh() {
      const result = ruleOfDraft(draft);
      Object.keys(problems).forEach(function (k) {
        const node = problems[k as keyof RuleDraft]!;
        node.textContent = '';
        node.hidden = true;
      });
      if ('rule' in result) {
        preview.textContent = rulePreview(result.rule);
        return;
      }
      result.problems.forEach(function (p) {
        const node = problems[p.field];
        if (node && draft[p.field].trim() !== '') {
          node.textContent = p.message;
          node.hidden = false;
        }
      });
      preview.textContent = 'Fill in the rule to see what it allows.';
    }
    const fields = FIELDS.map(function (f) {
      const input = el('input', {
        id: prefix + f.key,
        type: 'text',
        autocomplete: 'off',
        value: draft[f.key],
        placeholder: f.placeholder,
        inputmode: /Amount|Above/.test(f.key) ? 'decimal' : undefined,
        maxlength: f.key === 'currency' ? '3' : undefined,
      });
      input.addEventListener('input', function () {
        draft[f.key] = input.value;
        refresh();
      });
      const problem = el('p', { class: 'field-problem', id: prefix + f.key + '-problem', hidden: true });
      problems[f.key] = problem;
      return el(
        'div',
        { class: 'field' },
        el('label', { for: prefix + f.key, text: f.label }),
        input,
        el('p', { class: 'hint', text: f.hint }),
        problem,
      );
    });
    const period = el(
      'select',
      { id: prefix + 'period', 'aria-label': 'Period' },
      ['day', 'week', 'month'].map(function (p) {
        return el('option', { value: p, text: 'a ' + p });
      }),
    );
    period.value = draft.period;
    period.addEventListener('change', function () {
      draft.period = period.value;
      refresh();
    });
    const periodField = el('div', { class: 'field' }, el('label', { for: prefix + 'period', text: 'Period' }), period);
    const remove =
      drafts.length > 1
        ? el('button', { type: 'button', class: 'button button-quiet', text: 'Remove this rule' })
        : null;
    if (remove)
      remove.addEventListener('click', function () {
        drafts.splice(index, 1);
        renderEditor();
      });
    const box = el(
      'fieldset',
      { class: 'rule-editor', data: { rule: String(index) } },
      el('legend', { text: 'Rule ' + (index + 1) }),
      el('div', { class: 'field-row' }, fields.slice(0, 3)),
      el('div', { class: 'field-row' }, fields.slice(3), periodField),
      el('p', { class: 'hint', text: 'What this rule allows:' }),
      preview,
      remove,
    );
    refresh();
    return box;
  }

  function renderEditor() {
    const target = find('#template-rules');
    if (!target) return;
    replace(
      target,
      drafts.map(function (_d, i) {
        return ruleEditor(i);
      }),
    );
  }

  function wireEditor() {
    const form = find<HTMLFormElement>('#template-form');
    if (!form) return;
    renderEditor();
    $('#template-add-rule').addEventListener('click', function () {
      drafts.push({ ...EMPTY_DRAFT });
      renderEditor();
    });
    form.addEventListener(
      'submit',
      later(async function (event) {
        event.preventDefault();
        const error = $('#template-error');
        const name = $<HTMLInputElement>('#template-name').value.trim();
        if (!name) {
          showNotice(error, 'Give the template a name.');
          return;
        }
        const rules: MandateRule[] = [];
        for (let i = 0; i < drafts.length; i += 1) {
          const result = ruleOfDraft(drafts[i]!);
          if ('problems' in result) {
            showNotice(error, 'Rule ' + (i + 1) + ': ' + result.problems[0]!.message);
            return;
          }
          rules.push(result.rule);
        }
        await submitForm(
          state,
          error,
          [$<HTMLButtonElement>('#template-save')],
          'POST',
          ctx.base + '/templates',
          { name: name, rules: rules },
          function (tpl: Data) {
            $<HTMLInputElement>('#template-name').value = '';
            drafts.splice(0, drafts.length, { ...EMPTY_DRAFT });
            renderEditor();
            say('Template saved: ' + tpl.name);
          },
        );
        // The API's field messages as sentences, in the same turn as submitForm showed them.
        if (!error.hidden) error.textContent = plainMessage(error.textContent || '');
        await load();
      }),
    );
  }

  wireEditor();
  keepFresh(load, function () {
    return state.pending > 0;
  });
}
