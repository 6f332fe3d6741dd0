import { GEMINI_KEY, startMockGemini } from '../helpers/mock-gemini.js';
import { vendorSuite } from './vendor-suite.js';

/**
 * Provider kind `gemini` (issue 19 item 4): Google's native generateContent and
 * streamGenerateContent (SSE), the key in `x-goog-api-key`; a wrong key, which Gemini answers
 * with 400 API_KEY_INVALID, fails over like any refused credential instead of blaming the
 * client. The suite's checks (vendor-suite.ts) through both request shapes with the official SDKs.
 */
vendorSuite({
  kind: 'gemini',
  start: () => startMockGemini(),
  provider: (url) => ({ baseUrl: url, apiKeyEnv: 'GEMINI_API_KEY' }),
  env: { GEMINI_API_KEY: GEMINI_KEY },
  wrongEnv: { GEMINI_API_KEY: 'not-the-key' },
  upstreamModel: 'gemini-2.5-flash',
  refusal: 400,
  checkRequest(t, seen, stream) {
    t.is(
      seen.path,
      stream
        ? '/v1beta/models/gemini-2.5-flash:streamGenerateContent'
        : '/v1beta/models/gemini-2.5-flash:generateContent',
    );
    t.is(seen.headers['x-goog-api-key'], GEMINI_KEY);
    t.true(Array.isArray(seen.body.contents), 'contents, in Gemini shape');
    t.is(seen.body.messages, undefined);
    t.is(typeof seen.body.generationConfig.maxOutputTokens, 'number', 'the answer is bounded');
  },
});
