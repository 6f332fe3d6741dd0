/**
 * The ledger's own rules, and the report pieces the ledger, usage, budgets, webhooks and
 * integrations sections share (filter rows, fact lists, number columns). Appended to app.css by
 * app-style.ts.
 */
export const STYLE_LEDGER = `
/* Report pieces: filter rows, fact lists, numbers */
.filters { display: flex; flex-wrap: wrap; align-items: flex-end; gap: .25rem 1rem; margin-bottom: 1rem; }
.filter { flex: 1 1 11rem; min-width: 0; }
.filter label { margin-top: 0; }
.filter .hint { margin-bottom: 0; }
.filter-buttons { display: flex; gap: .5rem; flex: 0 0 auto; }
.facts { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: .3rem 1rem; margin: 0 0 .75rem; font-size: .9rem; }
.facts dt { color: var(--muted); }
.facts dd { margin: 0; overflow-wrap: anywhere; }
.facts.small { font-size: .8rem; gap: .1rem .6rem; }
tbody th[scope="row"] { text-transform: none; letter-spacing: normal; font-size: .9rem; font-weight: 600; color: var(--text); padding: .75rem .75rem .75rem 0; border-top: 1px solid var(--border); vertical-align: top; }
th.num, td.num { text-align: right; font-variant-numeric: tabular-nums; }
.wrap { overflow-wrap: anywhere; word-break: break-word; }
.named { text-decoration: underline dotted; text-underline-offset: 2px; cursor: help; }
.small { font-size: .8rem; }
.plain { list-style: none; margin: 0; padding: 0; }
.more { margin: .75rem 0 0; }
pre.mono { margin: .4rem 0 0; padding: .5rem .6rem; background: var(--subtle); border-radius: 6px; white-space: pre-wrap; overflow-wrap: anywhere; max-width: 40rem; }
details > summary { cursor: pointer; }

/* Ledger */
#ledger-verify .section-head { flex-wrap: wrap; }
.verify-result:empty { display: none; }
.verify-result { margin-top: .75rem; padding-top: .75rem; border-top: 1px solid var(--border); }
.verify-line { display: flex; flex-wrap: wrap; align-items: center; gap: .25rem .5rem; margin-bottom: .25rem; }
.note summary { font-size: .875rem; color: var(--muted); }
table.records td { font-size: .85rem; }
table.records td.data summary { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; font-size: .8rem; color: var(--muted); overflow-wrap: anywhere; }
.kind { font-weight: 600; white-space: nowrap; }
@media (max-width: 760px) {
  .facts { grid-template-columns: 1fr; gap: 0; }
  .facts dd { margin-bottom: .35rem; }
  /* A record as a stack of lines: "#index · when · kind", then actor, subject and data. */
  table.records thead { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
  table.records, table.records tbody, table.records tr { display: block; }
  table.records tr { padding: .6rem 0; border-top: 1px solid var(--border); }
  table.records td { display: block; border: 0; padding: .05rem 0; }
  table.records td.index, table.records td.when, table.records td:nth-child(3) { display: inline; padding-right: .5rem; }
  table.records td.index::before { content: "#"; }
  table.records td[data-label]::before { content: attr(data-label) ": "; color: var(--muted); font-family: system-ui, sans-serif; }
  .kind { white-space: normal; overflow-wrap: anywhere; }
}
`;
