import { el } from './helpers.js';
import { ruleOfDraft, rulePreview, type RuleDraft } from './rule-draft.js';

/** The template editor's fields of a rule, in the order shown. */
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

/**
 * One rule's editor: its fields, the problems the page can see beside each (shown once the field
 * has text), and a preview of what the rule allows that follows every keystroke. `drafts` is the
 * form's list of rules, changed in place; `redraw` draws the list again after a rule is removed.
 */
export function ruleEditor(drafts: RuleDraft[], index: number, redraw: () => void): HTMLElement {
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
    drafts.length > 1 ? el('button', { type: 'button', class: 'button button-quiet', text: 'Remove this rule' }) : null;
  if (remove)
    remove.addEventListener('click', function () {
      drafts.splice(index, 1);
      redraw();
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
