export { createPeopleService, type PeopleService, type PublicUser, type WorkspaceView } from './service.js';
export type { MemberListView, MemberView } from './members.js';
export { roleAllows, type Permission } from './permissions.js';
export { bootstrapIfEmpty, DEFAULT_OWNER_EMAIL } from './bootstrap.js';
