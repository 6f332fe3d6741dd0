/** The members section's own rules: a lockout in force. Appended by app-style.ts. */
export const STYLE_MEMBERS = `
/* Members */
.locked { margin-top: .3rem; font-size: .85rem; color: var(--danger); }
td .inline-form select { width: auto; min-width: 7.5rem; }
`;
