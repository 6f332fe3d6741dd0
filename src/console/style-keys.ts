/** The keys section's own rules: the scopes of a new token. Appended by app-style.ts. */
export const STYLE_KEYS = `
/* Keys and service tokens */
.scopes { border: 1px solid var(--border); border-radius: 6px; margin: .75rem 0; padding: .5rem .75rem; display: flex; flex-wrap: wrap; gap: .25rem 1.25rem; }
.scopes legend { font-size: .875rem; font-weight: 550; padding: 0 .25rem; }
.stack-form h3 { font-size: .95rem; margin: 1.25rem 0 .25rem; }
`;
