/** The integrations section's own rules: the refusal count. Appended to app.css by app-style.ts. */
export const STYLE_INTEGRATIONS = `
/* Integrations */
.integrations { list-style: none; margin: 0 0 .75rem; padding: 0; }
.integration { padding: 1rem 0; border-top: 1px solid var(--border); }
.integration:first-child { border-top: 0; padding-top: 0; }
.integration-head { display: flex; justify-content: space-between; align-items: flex-start; gap: .5rem 1rem; flex-wrap: wrap; margin-bottom: .6rem; }
.refusals { font-size: .875rem; color: var(--muted); white-space: nowrap; }
.refused { font-variant-numeric: tabular-nums; font-weight: 650; font-size: 1.1rem; color: var(--text); }
.has-refusals, .has-refusals .refused { color: var(--danger); }
`;
