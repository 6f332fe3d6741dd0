/**
 * The inbound integration kinds (docs/integrations.md), listed once: the `IntegrationKind` type,
 * the route's joi list, the registry's secret rules, `svc apply`'s document and the console's
 * choice all derive from these lists. Plain constants with no imports, so a records.ts may
 * `import type` from here and the store still depends on no domain code at run time
 * (test/architecture/layers.test.ts holds this file to that).
 */
export const INTEGRATION_KINDS = ['issuer', 'stripe', 'github', 'slack', 'chat-relay', 'ssf', 'acp'] as const;

export type IntegrationKind = (typeof INTEGRATION_KINDS)[number];

/** The kinds whose signing secret svc generates (`whs_…`) and answers once. */
export const GENERATED_KINDS = ['issuer', 'github', 'chat-relay', 'acp'] as const satisfies readonly IntegrationKind[];

/** The kinds that take the provider's own signing secret in the settings body (never answered back). */
export const GIVEN_KINDS = ['stripe', 'slack'] as const satisfies readonly IntegrationKind[];

/** Whether a string names a kind. */
export const isIntegrationKind = (value: string): value is IntegrationKind =>
  (INTEGRATION_KINDS as readonly string[]).includes(value);
