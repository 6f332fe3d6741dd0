export { createAgentsService, toAgentView, type AgentsService, type AgentView, type AgentActor } from './service.js';
