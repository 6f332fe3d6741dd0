import { keepFresh } from './console-page.js';
import { $, find, el, replace, later, showNotice, type Data } from './helpers.js';
import { plainMessage } from './plain-errors.js';
import { listOf, rulePreview } from './rule-draft.js';
import { workspaceContext, say, listAll, loadPart, drawList, submitForm } from './sections-shared.js';
/**
 * The blueprints section (/console/blueprints) in the browser: each blueprint with its tags and
 * its templates by name (their rules as sentences), and (owners, admins) a new one: a name, tags,
 * and the templates ticked. An agent is made from a blueprint on the agents page.
 */
export function section_blueprints() {
  const ctx = workspaceContext();
  const canManage = $('#blueprints-section').dataset.canManage === 'true';
  const state = { pending: 0 };
  let templates: Data[] = [];
  const ticked = new Set<string>();

  async function load() {
    await loadPart(state, 'blueprints', async function () {
      const [list, tpls] = await Promise.all([listAll(ctx.base + '/blueprints'), listAll(ctx.base + '/templates')]);
      templates = tpls;
      drawList(
        'blueprints',
        list,
        el(
          'p',
          { class: 'empty', id: 'blueprints-empty' },
          canManage
            ? 'No blueprints yet. Create one below from templates; then make agents from it on the Agents page.'
            : 'No blueprints yet: an owner or an admin creates them.',
        ),
        function (items) {
          return el('ul', { class: 'blueprint-list' }, items.map(blueprintItem));
        },
      );
      renderChoices();
    });
  }

  function templateOf(id: string): Data {
    return (
      templates.find(function (t) {
        return t.id === id;
      }) || null
    );
  }

  function blueprintItem(b: Data): HTMLElement {
    return el(
      'li',
      { data: { blueprint: b.id } },
      el('div', { class: 'item-title', text: b.name }),
      el('div', { class: 'muted mono small', text: b.id }),
      (b.tags || []).length
        ? el(
            'div',
            {},
            b.tags.map(function (t: string) {
              return el('span', { class: 'tag', text: t });
            }),
          )
        : null,
      (b.templates || []).length
        ? el(
            'ul',
            { class: 'plain' },
            b.templates.map(function (id: string) {
              const tpl = templateOf(id);
              return el(
                'li',
                {},
                el('strong', { text: tpl ? tpl.name : id }),
                tpl
                  ? el(
                      'ul',
                      { class: 'plain' },
                      (tpl.rules || []).map(function (r: Data) {
                        return el('li', { class: 'rule-sentence', text: rulePreview(r) });
                      }),
                    )
                  : null,
              );
            }),
          )
        : el('p', { class: 'muted', text: 'No templates: agents made from it start with no mandate.' }),
    );
  }

  function renderChoices() {
    const box = find('#blueprint-templates');
    if (!box) return;
    const legend = el('legend', { text: 'Templates' });
    if (!templates.length) {
      replace(
        box,
        legend,
        el(
          'p',
          { class: 'hint' },
          'No templates yet: ',
          el('a', { href: '/console/templates?w=' + encodeURIComponent(ctx.wid), text: 'write one' }),
          ' first.',
        ),
      );
      return;
    }
    replace(
      box,
      legend,
      templates.map(function (t) {
        const box = el('input', { type: 'checkbox', name: 'template', value: t.id });
        box.checked = ticked.has(t.id);
        box.addEventListener('change', function () {
          if (box.checked) ticked.add(t.id);
          else ticked.delete(t.id);
        });
        return el('label', { class: 'check' }, box, ' ' + t.name);
      }),
    );
  }

  function wireForm() {
    const form = find<HTMLFormElement>('#blueprint-form');
    if (!form) return;
    form.addEventListener(
      'submit',
      later(async function (event) {
        event.preventDefault();
        const error = $('#blueprint-error');
        const name = $<HTMLInputElement>('#blueprint-name').value.trim();
        if (!name) {
          showNotice(error, 'Give the blueprint a name.');
          return;
        }
        const chosen = templates
          .map(function (t) {
            return t.id as string;
          })
          .filter(function (id) {
            return ticked.has(id);
          });
        await submitForm(
          state,
          error,
          [$<HTMLButtonElement>('#blueprint-save')],
          'POST',
          ctx.base + '/blueprints',
          { name: name, tags: listOf($<HTMLInputElement>('#blueprint-tags').value), templates: chosen },
          function (b: Data) {
            $<HTMLInputElement>('#blueprint-name').value = '';
            $<HTMLInputElement>('#blueprint-tags').value = '';
            ticked.clear();
            say('Blueprint created: ' + b.name + '. Make an agent from it on the Agents page.');
          },
        );
        // The API's field messages as sentences, in the same turn as submitForm showed them.
        if (!error.hidden) error.textContent = plainMessage(error.textContent || '');
        await load();
      }),
    );
  }

  wireForm();
  keepFresh(load, function () {
    return state.pending > 0;
  });
}
