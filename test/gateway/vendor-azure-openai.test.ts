import { AZURE_API_VERSION, AZURE_KEY, startMockAzure } from '../helpers/mock-azure.js';
import { vendorSuite } from './vendor-suite.js';

/**
 * Provider kind `azure-openai` (issue 19 item 4): the deployment in the path, `api-version` in
 * the query, the key in `api-key`; the suite's checks (vendor-suite.ts) through both request
 * shapes with the official SDKs.
 */
vendorSuite({
  kind: 'azure-openai',
  start: () => startMockAzure(),
  provider: (url) => ({ baseUrl: url, apiVersion: AZURE_API_VERSION, apiKeyEnv: 'AZURE_OPENAI_KEY' }),
  env: { AZURE_OPENAI_KEY: AZURE_KEY },
  wrongEnv: { AZURE_OPENAI_KEY: 'not-the-key' },
  upstreamModel: 'prod-gpt4o',
  refusal: 400,
  checkRequest(t, seen, stream) {
    t.is(seen.path, '/openai/deployments/prod-gpt4o/chat/completions');
    t.is(seen.headers['api-key'], AZURE_KEY);
    t.is(seen.headers.authorization, undefined, 'the key goes in api-key only');
    t.is(seen.stream, stream);
    if (stream) t.deepEqual(seen.body.stream_options, { include_usage: true }, 'usage is always asked for');
    t.true(Array.isArray(seen.body.messages));
  },
});
