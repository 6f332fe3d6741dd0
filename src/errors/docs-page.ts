import { escapeHtml } from '../lib/html.js';
import { entryOf, errorTypes } from './catalogue.js';

/** The page behind every error's `docs` link, generated from the one catalogue. */
export function errorsDocsPage(): string {
  const rows = errorTypes
    .map((type) => {
      const e = entryOf(type);
      return `<section id="${type}"><h2><code>${type}</code> <span class="status">${e.status}</span></h2>
<p>${escapeHtml(e.message)}</p><p><strong>Fix:</strong> ${escapeHtml(e.fix)}</p>
<p class="meta">${e.validation ? 'Carries <code>errors</code>: a list of {field, message}. ' : ''}${e.exit === undefined ? '' : `<code>svc</code> exits ${e.exit}. `}Described in <code>docs/${escapeHtml(e.section)}</code> of svc's documentation.</p></section>`;
    })
    .join('\n');
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>svc errors</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font:15px/1.5 system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;color:#1d2329}
h1{font-size:1.4rem}h2{font-size:1.05rem;margin:1.6rem 0 .2rem}.status{color:#6b7480;font-weight:400}
.meta{color:#6b7480;font-size:.85rem}code{background:#f2f4f6;padding:0 .25rem;border-radius:3px}
section:target{background:#fff8e1;margin:0 -1rem;padding:.2rem 1rem}</style></head><body>
<h1>Errors</h1><p>Every error answers <code>{ "error": { "type", "message", "fix", "docs", "requestId", … } }</code>.
Branch on <code>type</code>; <code>message</code> may change. Each type below is stable.</p>
${rows}
</body></html>`;
}
