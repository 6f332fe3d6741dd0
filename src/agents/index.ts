export {
  createAgentsService,
  toAgentView,
  type AgentHolds,
  type Agents,
  type AgentsService,
  type AgentView,
  type AgentActor,
} from './service.js';
