/**
 * The setup sections' own rules (templates, blueprints, your account): the rule editor, its
 * preview, the QR code and the recovery codes. Appended to app.css by app-style.ts.
 */
export const STYLE_SETUP = `
/* Templates, blueprints, your account */
.rule-editor { border: 1px solid var(--border); border-radius: 6px; padding: .75rem 1rem; margin: .75rem 0; }
.rule-editor legend { font-weight: 600; padding: 0 .25rem; }
.rule-editor .field-row .field { flex: 1 1 11rem; }
.field-problem { color: var(--danger); font-size: .85rem; margin: .2rem 0 0; }
.rule-preview { background: var(--subtle); border-radius: 4px; padding: .5rem .75rem; margin: .5rem 0 0; }
.template-list, .blueprint-list, .session-list { list-style: none; margin: 0; padding: 0; }
.template-list > li, .blueprint-list > li, .session-list > li { padding: .75rem 0; border-top: 1px solid var(--border); }
.template-list > li:first-child, .blueprint-list > li:first-child, .session-list > li:first-child { border-top: 0; padding-top: 0; }
.session-list > li { display: flex; justify-content: space-between; align-items: center; gap: .5rem 1rem; flex-wrap: wrap; }
fieldset.choices { border: 0; margin: .75rem 0; padding: 0; display: grid; grid-template-columns: repeat(auto-fill, minmax(14rem, 1fr)); gap: .15rem 1rem; }
fieldset.choices legend { font-size: .875rem; font-weight: 550; margin-bottom: .3rem; padding: 0; }
.totp-qr { display: block; width: 12rem; max-width: 100%; height: auto; background: #fff; padding: .5rem; border: 1px solid var(--border); border-radius: 4px; margin: .5rem 0; }
.recovery-codes { display: grid; grid-template-columns: repeat(auto-fill, minmax(9rem, 1fr)); gap: .25rem 1rem; list-style: none; padding: 0; margin: .5rem 0; font-family: ui-monospace, monospace; }
`;
