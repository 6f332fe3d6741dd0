export {
  createAp2,
  audienceOf,
  type Ap2,
  type Ap2Deps,
  type Ap2Presentations,
  type Ap2Input,
  type Presented,
} from './service.js';
export { authorizeAp2Schema } from './schemas.js';
