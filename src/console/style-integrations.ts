/** The integrations section's own rules: the refusal count. Appended to app.css by app-style.ts. */
export const STYLE_INTEGRATIONS = `
/* Integrations */
#integration-table th[scope="row"] { font-weight: 400; min-width: 8rem; }
#integration-table td { font-size: .875rem; }
.refused { font-variant-numeric: tabular-nums; font-weight: 600; }
`;
