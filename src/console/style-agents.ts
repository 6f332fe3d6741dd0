/** The agents section's own rules: the agent's page (facts, standing, mandate, keys). Appended by app-style.ts. */
export const STYLE_AGENTS = `
/* Agents: one agent's page */
a.button { text-decoration: none; }
a.agent-name { color: var(--text); text-decoration-color: var(--border); text-underline-offset: 3px; }
a.agent-name:hover { color: var(--accent); text-decoration-color: currentColor; }
tr.selected > td { background: var(--subtle); }
.detail-grid { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 1rem 2rem; }
.detail-part { padding-top: 1rem; margin-top: 1rem; border-top: 1px solid var(--border); }
.detail-grid .detail-part { margin-top: 0; padding-top: 0; border-top: 0; }
.detail-part h3 { font-size: .95rem; margin-bottom: .5rem; }
.detail-part h4 { font-size: .85rem; margin: 1rem 0 .4rem; color: var(--muted); text-transform: uppercase; letter-spacing: .04em; }
.detail-part .inline-form { margin-top: .6rem; }
.facts { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: .25rem 1rem; margin: 0; font-size: .9rem; }
.facts dt { color: var(--muted); }
.facts dd { margin: 0; overflow-wrap: anywhere; }
.rules, .templates, .template-rules, .keys { list-style: none; margin: 0; padding: 0; }
.rule, .template, .key { display: flex; align-items: center; gap: .5rem 1rem; flex-wrap: wrap; padding: .5rem 0; border-top: 1px solid var(--border); }
.rule:first-child, .template:first-child, .key:first-child { border-top: 0; }
.rule-text { flex: 1 1 16rem; min-width: 0; overflow-wrap: anywhere; }
.rule-id { font-size: .75rem; }
.template > div, .key > div { flex: 1 1 16rem; min-width: 0; overflow-wrap: anywhere; }
.template-rules { color: var(--muted); font-size: .85rem; }
@media (max-width: 760px) {
  .detail-grid { grid-template-columns: minmax(0, 1fr); }
}
`;
