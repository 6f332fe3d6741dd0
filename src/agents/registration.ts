import type { AgentRecord } from './records.js';
import type { AgentActor } from './service.js';

/** An agent to register: its name and owner, and where its tags and mandate come from. */
export interface RegistrationInput {
  workspaceId: string;
  name: string;
  actsFor?: string | null;
  tags?: string[];
  /** The blueprint whose tags and templates it takes. */
  blueprint?: string;
  /** Templates whose rules its mandate takes, after the blueprint's. */
  templates?: string[];
}

/**
 * Registering an agent with its mandate from templates, in one write: what the agents' routes ask
 * of the blueprints service, declared here so that agents stand below blueprints (`app.ts` hands
 * the blueprints service over).
 */
export interface AgentRegistration {
  register(input: RegistrationInput, who: AgentActor): Promise<AgentRecord & { mandateRules: number }>;
}
