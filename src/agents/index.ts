export { createAgentsService, type AgentsService } from './service.js';
