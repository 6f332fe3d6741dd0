import type { ProviderKind } from '../../settings/schema.js';
import { anthropic } from './anthropic.js';
import { azureOpenai } from './azure-openai.js';
import { bedrock } from './bedrock.js';
import { gemini } from './gemini.js';
import { openai } from './openai.js';
import type { VendorAdapter } from './vendor.js';

/** Every vendor kind's adapter (vendor.ts). `openai` is also the catch-all for any OpenAI-compatible vendor. */
const ADAPTERS: Record<ProviderKind, VendorAdapter> = {
  openai,
  anthropic,
  'azure-openai': azureOpenai,
  gemini,
  bedrock,
};

export const vendorOf = (kind: ProviderKind): VendorAdapter => ADAPTERS[kind];
