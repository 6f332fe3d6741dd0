/**
 * The usage section's own rules: the chart (drawn by the page script as SVG; its colours are
 * these classes, as the CSP allows no style attribute), its legend and the totals. The series
 * colours keep a contrast of at least 3:1 against the card in both schemes. Also used by the
 * usage table's swatches. Appended to app.css by app-style.ts.
 */
export const STYLE_USAGE = `
/* Usage */
.summary p { font-size: 1rem; display: flex; flex-wrap: wrap; align-items: center; gap: .25rem .4rem; }
.chart { margin: .5rem 0 1rem; }
.chart-frame { width: 100%; overflow: hidden; }
.chart-svg { display: block; max-width: 100%; height: auto; }
.chart-svg .grid { stroke: var(--border); stroke-width: 1; }
.chart-svg .axis { fill: var(--muted); font-size: 11px; font-family: inherit; }
.chart-svg .bar { stroke: var(--surface); stroke-width: .5; }
.series-0 { fill: #2f5d8a; background: #2f5d8a; }
.series-1 { fill: #c0622d; background: #c0622d; }
.series-2 { fill: #3d8a5a; background: #3d8a5a; }
.series-3 { fill: #8a4f9e; background: #8a4f9e; }
.series-4 { fill: #b0902a; background: #b0902a; }
.series-5 { fill: #7b8794; background: #7b8794; }
@media (prefers-color-scheme: dark) {
  .series-0 { fill: #6ea3d8; background: #6ea3d8; }
  .series-1 { fill: #e88d5a; background: #e88d5a; }
  .series-2 { fill: #6cc08c; background: #6cc08c; }
  .series-3 { fill: #c28ad4; background: #c28ad4; }
  .series-4 { fill: #e0c15a; background: #e0c15a; }
  .series-5 { fill: #a3adb8; background: #a3adb8; }
}
.legend { display: flex; flex-wrap: wrap; gap: .25rem 1rem; list-style: none; margin: .5rem 0 0; padding: 0; font-size: .85rem; overflow-wrap: anywhere; }
.legend li { display: inline-flex; align-items: center; gap: .35rem; min-width: 0; }
.swatch { display: inline-block; flex: 0 0 auto; width: .75rem; height: .75rem; border-radius: 2px; margin-right: .35rem; vertical-align: -.05rem; }
#usage-table tbody th .swatch { margin-right: .45rem; }
.periods { margin-top: 1rem; }
@media (max-width: 760px) {
  .numbers .minor { display: none; }
}
.periods summary { font-size: .9rem; color: var(--muted); margin-bottom: .5rem; }
`;
