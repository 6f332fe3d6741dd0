/** The approvals section's own rules: why each approval was asked. Appended by app-style.ts. */
export const STYLE_APPROVALS = `
/* Approvals: the rule and the reason that asked */
.hint-inline { font-size: .8rem; }
.approvals-list { list-style: none; }
.item-rank { color: var(--muted); font-weight: 400; }
.why { margin-top: .5rem; padding: .5rem .75rem; border-left: 3px solid var(--border); background: var(--subtle); border-radius: 0 6px 6px 0; font-size: .875rem; }
.why-line { display: flex; flex-wrap: wrap; gap: .1rem .6rem; overflow-wrap: anywhere; }
.why-line + .why-line { margin-top: .2rem; }
.why-label { color: var(--muted); font-weight: 600; min-width: 4rem; }
.waited { font-weight: 550; color: var(--text); }
`;
