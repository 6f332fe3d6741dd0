export { createBlueprintsService, type BlueprintsService } from './service.js';
export type { Registration } from './schemas.js';
