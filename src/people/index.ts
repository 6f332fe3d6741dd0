export {
  createPeopleService,
  type People,
  type PeopleService,
  type PublicUser,
  type WorkspaceView,
} from './service.js';
export type { MemberListView, MemberView, Members } from './members.js';
export { roleAllows, type Permission } from './permissions.js';
export { bootstrapIfEmpty, DEFAULT_OWNER_EMAIL } from './bootstrap.js';
