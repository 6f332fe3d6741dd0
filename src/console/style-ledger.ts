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
th.num, td.num { text-align: right; font-variant-numeric: tabular-nums; }
.wrap { overflow-wrap: anywhere; word-break: break-word; }
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
.kind { font-weight: 600; overflow-wrap: anywhere; }
@media (max-width: 760px) {
  table.records th:nth-child(5), table.records td:nth-child(5) { display: none; }
  .facts { grid-template-columns: 1fr; gap: 0; }
  .facts dd { margin-bottom: .35rem; }
}
`;
