/** The budgets section's own rules: a budget's use (a meter) and its ladder. Appended to app.css by app-style.ts. */
export const STYLE_BUDGETS = `
/* Budgets */
.budgets { list-style: none; margin: 0; padding: 0; }
.budget { padding: 1rem 0; border-top: 1px solid var(--border); }
.budget:first-child { border-top: 0; padding-top: 0; }
.budget-head { display: flex; justify-content: space-between; align-items: flex-start; gap: .5rem 1rem; flex-wrap: wrap; }
.budget-use { display: flex; align-items: center; flex-wrap: wrap; gap: .35rem 1rem; margin: .6rem 0 .35rem; }
.budget-use meter { flex: 1 1 12rem; min-width: 8rem; height: .9rem; }
.budget-figures { font-variant-numeric: tabular-nums; font-size: .9rem; }
.ladder { display: flex; flex-wrap: wrap; gap: .35rem; list-style: none; margin: .6rem 0 0; padding: 0; }
.rung { padding: .15rem .55rem; border: 1px solid var(--border); border-radius: 999px; font-size: .8rem; color: var(--muted); }
.rung-at { font-variant-numeric: tabular-nums; font-weight: 600; }
.rung.reached { color: var(--warn); border-color: var(--warn); }
.rung.current { background: var(--warn-bg); }
#budget-form .button-primary { margin-top: .25rem; }
`;
