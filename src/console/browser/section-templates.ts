import { keepFresh } from './console-page.js';
import { $, find, el, replace, later, showNotice, type Data } from './helpers.js';
import { plainMessage } from './plain-errors.js';
import { EMPTY_DRAFT, ruleOfDraft, rulePreview, type RuleDraft } from './rule-draft.js';
import { ruleEditor } from './template-rule-editor.js';
import { workspaceContext, say, listAll, loadPart, drawList, submitForm } from './sections-shared.js';
import type { MandateRule } from './text.js';
/**
 * The templates section (/console/templates) in the browser: the workspace's templates, each rule
 * as a plain sentence, and (owners, admins) the rule editor: each rule's fields, the problems the
 * page can see beside them, and a preview of what the rule allows that follows every keystroke.
 * Amounts are typed in the currency's units and sent in minor units (rule-draft.ts); one rule's
 * editor: template-rule-editor.ts.
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

  function renderEditor() {
    const target = find('#template-rules');
    if (!target) return;
    replace(
      target,
      drafts.map(function (_d, i) {
        return ruleEditor(drafts, i, renderEditor);
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
