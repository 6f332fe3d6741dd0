import test from 'ava';
import { call } from '../helpers/http.js';
import { startMockVendor, type MockVendor } from '../helpers/mock-vendor.js';

/**
 * The mock vendor's Responses, embeddings and token-count endpoints check what the vendors do:
 * the OpenAI key as a bearer, the Anthropic key and version, the required fields; and a kept
 * response is continued, an unknown one is a 400.
 */
let vendor: MockVendor;

test.before(async () => {
  vendor = await startMockVendor();
});

test.after.always(async () => {
  await vendor?.close();
});

const openai = { authorization: 'Bearer sk-mock-openai' };
const anthropic = { 'x-api-key': 'sk-mock-anthropic', 'anthropic-version': '2023-06-01' };

test("a wrong key is a 401 in the vendor's shape on every new endpoint", async (t) => {
  const wrong = { authorization: 'Bearer sk-wrong' };
  const responses = await call(vendor.url, 'POST', '/v1/responses', {
    headers: wrong,
    json: { model: 'm', input: 'x' },
  });
  t.is(responses.status, 401);
  t.is(responses.body.error.code, 'invalid_api_key');
  const embeddings = await call(vendor.url, 'POST', '/v1/embeddings', {
    headers: wrong,
    json: { model: 'm', input: 'x' },
  });
  t.is(embeddings.status, 401);
  const counted = await call(vendor.url, 'POST', '/v1/messages/count_tokens', {
    headers: { 'x-api-key': 'sk-wrong', 'anthropic-version': '2023-06-01' },
    json: { model: 'm', messages: [{ role: 'user', content: 'x' }] },
  });
  t.is(counted.status, 401);
  t.is(counted.body.error.type, 'authentication_error');
  const unversioned = await call(vendor.url, 'POST', '/v1/messages/count_tokens', {
    headers: { 'x-api-key': 'sk-mock-anthropic' },
    json: { model: 'm', messages: [{ role: 'user', content: 'x' }] },
  });
  t.is(unversioned.status, 400);
});

test('required fields, and kept responses', async (t) => {
  t.is((await call(vendor.url, 'POST', '/v1/responses', { headers: openai, json: { model: 'm' } })).status, 400);
  t.is((await call(vendor.url, 'POST', '/v1/embeddings', { headers: openai, json: { model: 'm' } })).status, 400);
  const first = await call(vendor.url, 'POST', '/v1/responses', {
    headers: openai,
    json: { model: 'm', input: 'remember this', store: true },
  });
  t.is(first.body.output[0].content[0].text, 'echo: remember this');
  const next = await call(vendor.url, 'POST', '/v1/responses', {
    headers: openai,
    json: { model: 'm', input: 'and this', previous_response_id: first.body.id },
  });
  t.is(next.body.usage.input_tokens, 7, 'the kept conversation (2 + 3 words) counts as prompt, with the 2 new');
  const unknown = await call(vendor.url, 'POST', '/v1/responses', {
    headers: openai,
    json: { model: 'm', input: 'x', previous_response_id: 'resp_nope' },
  });
  t.is(unknown.status, 400);
  t.is(unknown.body.error.code, 'previous_response_not_found');
  const counted = await call(vendor.url, 'POST', '/v1/messages/count_tokens', {
    headers: anthropic,
    json: { model: 'm', system: 'two words', messages: [{ role: 'user', content: 'three more words' }] },
  });
  t.deepEqual(counted.body, { input_tokens: 5 });
});
