export { createMandates, type Mandates, type MandatesDeps, type MandatesService, type MandateView } from './service.js';
export {
  mandateInputSchema,
  templateInputSchema,
  BUILT_IN_TYPES,
  type MandateInput,
  type TemplateInput,
} from './schemas.js';
export { evaluate, periodStart, type Evaluation, type ActionFacts } from './evaluate.js';
