import { escapeHtml } from '../lib/html.js';

/**
 * GET /docs/api: the OpenAPI document as a page a person reads, rendered on the server (no
 * script at all, one stylesheet from this origin, so the strict CSP holds): operations grouped by
 * tag, each with its credential, parameters, body schema and errors (linked to /docs/errors).
 */
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

export const API_PAGE_CSS = `body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#1d2329}
h1{font-size:1.4rem}h2{font-size:1.15rem;margin:2rem 0 .4rem;border-bottom:1px solid #e3e6ea}
h3{font-size:1rem;margin:1.2rem 0 .2rem;word-break:break-all}.method{display:inline-block;min-width:4rem;font-weight:600;text-transform:uppercase}
.meta{color:#6b7480;font-size:.85rem}code{background:#f2f4f6;padding:0 .25rem;border-radius:3px}
pre{background:#f6f8fa;padding:.6rem;overflow-x:auto;font-size:.8rem;max-height:24rem}
table{border-collapse:collapse;font-size:.85rem}td,th{border:1px solid #e3e6ea;padding:.2rem .5rem;text-align:left;vertical-align:top}
nav a{margin-right:.6rem}details{margin:.3rem 0}`;

export const API_PAGE_POLICY =
  "default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

function securityOf(op: Json): string {
  const auth = op['x-svc-auth'];
  if (auth === 'none') return 'none';
  const names = (op.security as Json[]).flatMap((r) => Object.keys(r));
  const scope = op['x-svc-token-scope'] ? ` (scope <code>${escapeHtml(op['x-svc-token-scope'])}</code>)` : '';
  return `${names.map((n) => `<code>${escapeHtml(n)}</code>`).join(' or ') || escapeHtml(String(auth))}${scope}`;
}

function parametersOf(op: Json): string {
  const params = (op.parameters ?? []) as Json[];
  if (params.length === 0) return '';
  const rows = params
    .map(
      (p) =>
        `<tr><td><code>${escapeHtml(p.name)}</code></td><td>${p.in}</td><td>${p.required ? 'required' : ''}</td><td><code>${escapeHtml(JSON.stringify(p.schema))}</code></td></tr>`,
    )
    .join('');
  return `<table><tr><th>parameter</th><th>in</th><th></th><th>schema</th></tr>${rows}</table>`;
}

function errorsOf(op: Json): string {
  const items = Object.entries(op.responses as Json)
    .filter(([status]) => status !== '200')
    .flatMap(([status, r]) =>
      ((r as Json)['x-svc-error-types'] as string[]).map(
        (t) => `<a href="/docs/errors#${escapeHtml(t)}"><code>${escapeHtml(t)}</code></a> ${status}`,
      ),
    );
  return items.length ? `<p class="meta">Errors: ${items.join(', ')}</p>` : '';
}

export function apiPage(doc: Json): string {
  const byTag = new Map<string, string[]>();
  for (const [path, item] of Object.entries(doc.paths as Json)) {
    for (const [method, op] of Object.entries(item as Json)) {
      const body = op.requestBody?.content?.['application/json']?.schema;
      const html = `<section><h3><span class="method">${method}</span> <code>${escapeHtml(path)}</code></h3>
<p class="meta">Credential: ${securityOf(op)}</p>${parametersOf(op)}
${body ? `<details><summary>Body schema</summary><pre>${escapeHtml(JSON.stringify(body, null, 2))}</pre></details>` : ''}
${errorsOf(op)}</section>`;
      const tag = (op.tags as string[])[0]!;
      byTag.set(tag, [...(byTag.get(tag) ?? []), html]);
    }
  }
  const tags = [...byTag.keys()].sort();
  const anchor = (tag: string) => `tag-${tag.replace(/[^a-z0-9]+/gi, '-')}`;
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>svc API reference</title>
<meta name="viewport" content="width=device-width, initial-scale=1"><link rel="stylesheet" href="/docs/api.css"></head><body>
<h1>svc API reference</h1>
<p>Generated from this server's route table; the machine-readable document is <a href="/openapi.json">/openapi.json</a> (OpenAPI ${escapeHtml(doc.openapi)}).
Every error answers <code>{ "error": { "type", "message", "fix", "docs", "requestId" } }</code>: see <a href="/docs/errors">the errors</a>.</p>
<nav>${tags.map((t) => `<a href="#${anchor(t)}">${escapeHtml(t)}</a>`).join(' ')}</nav>
${tags.map((t) => `<h2 id="${anchor(t)}">${escapeHtml(t)}</h2>\n${byTag.get(t)!.join('\n')}`).join('\n')}
</body></html>`;
}
