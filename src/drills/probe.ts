/** The action type a drill's probes ask for: only a drill agent's mandate allows it. */
export const DRILL_PROBE = 'drill.probe';
