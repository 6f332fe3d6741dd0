import type { ProviderKind } from '../../settings/schema.js';
import { azureOpenai } from './azure-openai.js';
import { bedrock } from './bedrock.js';
import { gemini } from './gemini.js';
import type { VendorAdapter } from './vendor.js';

/**
 * The vendor kinds with an adapter (vendor.ts). `openai` (also the catch-all for any
 * OpenAI-compatible vendor) and `anthropic` are forwarded natively by forward.ts.
 */
const ADAPTERS: Partial<Record<ProviderKind, VendorAdapter>> = {
  'azure-openai': azureOpenai,
  gemini,
  bedrock,
};

export const vendorOf = (kind: ProviderKind): VendorAdapter | undefined => ADAPTERS[kind];
