export { createAgentSigning, type AgentSigning, type AgentSigningDeps, type SignedDirectory } from './service.js';
export { signHttpSchema, type SignHttpInput } from './schemas.js';
export { DIRECTORY_PATH, DIRECTORY_MEDIA_TYPE, verifyAgentRequest, type AgentSignature } from './profile.js';
