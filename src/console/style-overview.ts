/** The overview's own rules: the "stop every agent" switch. Appended to app.css by app-style.ts. */
export const STYLE_OVERVIEW = `
/* Stop every agent */
.switch { display: flex; align-items: center; justify-content: space-between; gap: 1rem 2rem; flex-wrap: wrap; }
.switch-state { display: flex; flex-direction: column; align-items: flex-start; gap: .35rem; flex: 1 1 22rem; }
.switch > .inline-form, .switch > .button { flex: 0 1 30rem; }
.switch > .button { flex: 0 0 auto; }
.switch > .inline-form { flex-wrap: nowrap; }
.switch-state strong { font-weight: 600; }
.switch.stopped { padding: .85rem 1rem; border-radius: 8px; background: var(--danger-bg); }
.switch.stopped .switch-state strong { color: var(--danger); }
@media (max-width: 760px) {
  .switch > .inline-form { flex: 1 1 100%; flex-wrap: wrap; }
  .switch > .inline-form input { min-width: 0; }
}
`;
