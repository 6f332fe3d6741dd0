import type { GatewayModel, GatewaySettings, PolicyProfile } from '../settings/schema.js';

/**
 * Which models may serve a request, in the order to try them (docs/gateway.md; issue 6).
 * Rules:
 * - A model serves a task class when its `taskClasses` holds `*`, the class itself, or a parent
 *   of it (`code` serves `code.review`). Task class `embedding` (and its subclasses) is served
 *   only by models that name it: `*` means every class of chat.
 * - A key's policy profile keeps to its models, providers, domiciles and regions.
 * - `x-svc-objective: sovereign` keeps to the deployment's home domicile (and region, if set).
 * - Order by objective: `cost` cheapest first (input plus output price); `quality` best first;
 *   `latency` fastest observed first (the model's latency tier until it has been measured);
 *   `balanced` and `sovereign` the lowest price per quality point first. Ties keep catalogue
 *   order, except that the model the client asked for goes first among equals.
 * - With no eligible model, the relaxations say, for each model that serves the task class, what
 *   would admit it, at what price, and who signs that off.
 */
export type Objective = 'balanced' | 'cost' | 'quality' | 'latency' | 'sovereign';
export const OBJECTIVES: readonly Objective[] = ['balanced', 'cost', 'quality', 'latency', 'sovereign'];

export interface Relaxation {
  model: string;
  provider: string;
  jurisdiction: { domicile: string; region: string };
  priceMicrosPerMTokIn: number;
  priceMicrosPerMTokOut: number;
  relax: string[];
  signOff: string;
}

export const servesClass = (model: GatewayModel, taskClass: string): boolean =>
  model.taskClasses.some((c) => c === '*' || c === taskClass || taskClass.startsWith(`${c}.`));

/** The task class of embedding models (POST /v1/embeddings). */
export const EMBEDDING = 'embedding';

/**
 * Whether a model declares the embedding class (or a subclass): `*` does not, since a chat model
 * serves every class of chat but no embeddings.
 */
export const declaresEmbedding = (model: GatewayModel): boolean =>
  model.taskClasses.some((c) => c === EMBEDDING || c.startsWith(`${EMBEDDING}.`));

const price = (m: GatewayModel) => m.priceMicrosPerMTokIn + m.priceMicrosPerMTokOut;

/** Why a profile or the objective keeps this model out (empty: it is admitted). */
function blockers(
  m: GatewayModel,
  profile: PolicyProfile | null,
  objective: Objective,
  home: GatewaySettings['home'],
): string[] {
  const out: string[] = [];
  if (profile?.models && !profile.models.includes(m.id)) out.push(`add model ${m.id} to policy profile ${profile.id}`);
  // A model served from several deployments is admitted when one is on an allowed provider (the
  // upstream step keeps to those: deployments.ts).
  if (profile?.providers && !m.deployments.some((d) => profile.providers!.includes(d.provider)))
    out.push(`allow provider ${m.provider} in policy profile ${profile.id}`);
  if (profile?.domiciles && !profile.domiciles.includes(m.jurisdiction.domicile))
    out.push(`allow domicile ${m.jurisdiction.domicile} in policy profile ${profile.id}`);
  if (profile?.regions && !profile.regions.includes(m.jurisdiction.region))
    out.push(`allow region ${m.jurisdiction.region} in policy profile ${profile.id}`);
  if (
    objective === 'sovereign' &&
    (m.jurisdiction.domicile !== home.domicile || (home.region !== null && m.jurisdiction.region !== home.region))
  ) {
    out.push(
      `drop x-svc-objective: sovereign (the model is domiciled in ${m.jurisdiction.domicile}, ${m.jurisdiction.region})`,
    );
  }
  return out;
}

/** What a key's policy profile would need to admit this model (empty: it is admitted). */
export const profileBlockers = (
  m: GatewayModel,
  profile: PolicyProfile | null,
  home: GatewaySettings['home'],
): string[] => blockers(m, profile, 'balanced', home);

export function eligibleModels(input: {
  models: readonly GatewayModel[];
  taskClass: string;
  objective: Objective;
  profile: PolicyProfile | null;
  home: GatewaySettings['home'];
  requested: string | null;
  observedLatencyMs: (modelId: string) => number | undefined;
}): { models: GatewayModel[]; relaxations: Relaxation[] } {
  const embedding = input.taskClass === EMBEDDING || input.taskClass.startsWith(`${EMBEDDING}.`);
  const serving = input.models.filter((m) => servesClass(m, input.taskClass) && (!embedding || declaresEmbedding(m)));
  const admitted = serving.filter((m) => blockers(m, input.profile, input.objective, input.home).length === 0);
  if (admitted.length === 0) {
    const relaxations = serving.map((m) => ({
      model: m.id,
      provider: m.provider,
      jurisdiction: m.jurisdiction,
      priceMicrosPerMTokIn: m.priceMicrosPerMTokIn,
      priceMicrosPerMTokOut: m.priceMicrosPerMTokOut,
      relax: blockers(m, input.profile, input.objective, input.home),
      signOff: input.profile?.signOff ?? 'a workspace owner',
    }));
    return { models: [], relaxations };
  }
  const latency = (m: GatewayModel) => input.observedLatencyMs(m.id) ?? m.latency * 1000;
  const key: Record<Objective, (m: GatewayModel) => number> = {
    cost: price,
    quality: (m) => -m.quality,
    latency,
    balanced: (m) => price(m) / (m.quality + 1),
    sovereign: (m) => price(m) / (m.quality + 1),
  };
  const score = key[input.objective];
  const order = admitted.map((m, i) => ({ m, i, s: score(m), asked: m.id === input.requested ? 0 : 1 }));
  order.sort((a, b) => a.s - b.s || a.asked - b.asked || a.i - b.i);
  return { models: order.map((o) => o.m), relaxations: [] };
}
