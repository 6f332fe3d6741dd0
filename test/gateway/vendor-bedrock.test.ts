import test from 'ava';
import { assertError, bearer, call } from '../helpers/http.js';
import { AWS_ENV, BEDROCK_REGION, startMockBedrock } from '../helpers/mock-bedrock.js';
import { startMockVendor } from '../helpers/mock-vendor.js';
import { stopAndClean } from '../helpers/process.js';
import { startGateway, user } from './support.js';
import { catalogue, vendorSuite } from './vendor-suite.js';

/**
 * Provider kind `bedrock` (issue 19 item 4): the Converse and ConverseStream APIs, signed with
 * SigV4 by AWS's signer from the standard AWS environment variables; the mock recomputes the
 * signature with the same signer. The suite's checks (vendor-suite.ts) through both request
 * shapes with the official SDKs, then what is Bedrock's own: its exception inside the event
 * stream, a wrong access key, and no credentials at all (nothing is sent).
 */
const UPSTREAM = 'anthropic.claude-3-haiku-20240307-v1:0';

vendorSuite({
  kind: 'bedrock',
  start: () => startMockBedrock(),
  provider: (url) => ({ baseUrl: url, region: BEDROCK_REGION }),
  env: AWS_ENV,
  wrongEnv: { ...AWS_ENV, AWS_SECRET_ACCESS_KEY: 'not/the/secret/key/for/bedrock/tests/00000' },
  upstreamModel: UPSTREAM,
  refusal: 400,
  checkRequest(t, seen, stream) {
    t.is(seen.path, `/model/${encodeURIComponent(UPSTREAM)}/${stream ? 'converse-stream' : 'converse'}`);
    t.regex(
      String(seen.headers.authorization),
      new RegExp(
        `^AWS4-HMAC-SHA256 Credential=${AWS_ENV.AWS_ACCESS_KEY_ID}/\\d{8}/${BEDROCK_REGION}/bedrock/aws4_request`,
      ),
    );
    t.true(Array.isArray(seen.body.messages));
    t.is(typeof seen.body.inferenceConfig.maxTokens, 'number');
    t.is(seen.body.model, undefined, 'the model is in the path only');
  },
});

test.serial(
  'bedrock: a throttlingException inside the event stream, before any event, fails over; a session token is signed',
  async (t) => {
    const mock = await startMockBedrock();
    const vendor = await startMockVendor();
    const gw = await startGateway(
      vendor,
      {
        providers: [
          { id: 'vendor-o', kind: 'openai', baseUrl: vendor.openaiBase, apiKeyEnv: 'VENDOR_O_KEY' },
          { id: 'bedrock', kind: 'bedrock', baseUrl: mock.url, region: BEDROCK_REGION },
        ],
        models: catalogue('bedrock', UPSTREAM),
        policyProfiles: [],
      },
      { ...AWS_ENV, AWS_SESSION_TOKEN: 'mock-session-token' },
    );
    try {
      const key = await gw.key({ defaultTaskClass: 'general' });
      mock.fault(UPSTREAM, { kind: 'exception', type: 'throttlingException' });
      const { data, response } = await gw
        .openai(key)
        .chat.completions.create({ model: 'vendor-model', messages: user('hello'), stream: true })
        .withResponse();
      let text = '';
      for await (const chunk of data) text += chunk.choices[0]?.delta.content ?? '';
      t.is(text, 'echo: hello');
      t.is(response.headers.get('x-svc-routed-to'), 'backup');
      t.is(mock.calls.at(-1)!.headers['x-amz-security-token'], 'mock-session-token');

      const res = await gw
        .anthropic(key)
        .messages.create({ model: 'vendor-model', max_tokens: 20, messages: user('hi') });
      t.is(
        res.content[0]?.type === 'text' ? res.content[0].text : '',
        'echo: hi',
        'signed with the session token, accepted',
      );
    } finally {
      await stopAndClean(gw.server);
      await mock.close();
      await vendor.close();
    }
  },
);

test.serial(
  'bedrock: an unknown access key and missing credentials are 502 upstream_failure; without credentials nothing is sent',
  async (t) => {
    const mock = await startMockBedrock();
    const vendor = await startMockVendor();
    const gateway = {
      providers: [{ id: 'bedrock', kind: 'bedrock', baseUrl: mock.url, region: BEDROCK_REGION }],
      models: catalogue('bedrock', UPSTREAM, true),
      policyProfiles: [],
    };
    for (const env of [{ ...AWS_ENV, AWS_ACCESS_KEY_ID: 'AKIAUNKNOWN000000000' }, {}]) {
      const gw = await startGateway(vendor, gateway, env);
      try {
        const key = await gw.key({ defaultTaskClass: 'general' });
        const before = mock.count();
        const res = await call(gw.server.url, 'POST', '/v1/chat/completions', {
          headers: bearer(key),
          json: { model: 'vendor-model', messages: user('hello') },
        });
        assertError(t, res, 502, 'upstream_failure');
        t.deepEqual(res.body.error.attemptedModels, ['vendor-model']);
        t.is(mock.count() - before, 'AWS_ACCESS_KEY_ID' in env ? 1 : 0);
      } finally {
        await stopAndClean(gw.server);
      }
    }
    await mock.close();
    await vendor.close();
  },
);
