/** The webhooks section's own rules: endpoints, their delivery logs, the event boxes and the secret shown once. Appended to app.css by app-style.ts. */
export const STYLE_WEBHOOKS = `
/* Webhooks */
.endpoints { list-style: none; margin: 0; padding: 0; }
.endpoint { padding: 1rem 0; border-top: 1px solid var(--border); }
.endpoint:first-child { border-top: 0; padding-top: 0; }
.endpoint-head { display: flex; justify-content: space-between; align-items: flex-start; gap: .75rem 1rem; flex-wrap: wrap; }
.endpoint-main { flex: 1 1 20rem; min-width: 0; }
.endpoint-url { font-weight: 600; overflow-wrap: anywhere; }
.endpoint-actions { display: flex; flex-wrap: wrap; gap: .5rem; }
.confirm { display: inline-flex; flex-wrap: wrap; align-items: center; gap: .5rem; }
.delivery-log { margin-top: .75rem; }
table.deliveries td { font-size: .85rem; }
fieldset.events { border: 0; margin: .75rem 0; padding: 0; display: grid; grid-template-columns: repeat(auto-fill, minmax(14rem, 1fr)); gap: .15rem 1rem; }
fieldset.events legend { font-size: .875rem; font-weight: 550; margin-bottom: .3rem; padding: 0; }
label.check { display: flex; align-items: center; gap: .4rem; margin: .2rem 0; font-weight: 400; }
label.check input { width: auto; }
.secret-once { margin-top: 1rem; padding: .75rem .9rem; border-radius: 6px; background: var(--warn-bg); color: var(--warn); font-size: .9rem; }
.secret-once .secret { display: block; margin-top: .4rem; color: var(--text); overflow-wrap: anywhere; user-select: all; }
/* Its visually hidden heading stays inside the log, which may scroll sideways. */
.delivery-log { position: relative; }
@media (max-width: 760px) {
  /* A delivery as two lines: event and state, then the last answer and Redeliver. */
  table.deliveries thead { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
  table.deliveries, table.deliveries tbody { display: block; }
  table.deliveries tr { display: grid; grid-template-columns: minmax(0, 1fr) auto; gap: .3rem .75rem; align-items: center; padding: .6rem 0; border-top: 1px solid var(--border); }
  table.deliveries td { display: block; border: 0; padding: 0; }
  table.deliveries td:nth-child(3) { display: none; }
  table.deliveries td.actions { text-align: right; }
}
`;
