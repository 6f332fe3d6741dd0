import { Sha256 } from '@aws-crypto/sha256-js';
import { EventStreamCodec } from '@smithy/core/event-streams';
import { SignatureV4 } from '@smithy/signature-v4';
import { converseUsageOf } from './cache-usage.js';
import type { Json } from './http.js';
import {
  compose,
  send,
  startLoopbackVendor,
  TOOL_INPUT,
  inputPieces,
  writePieces,
  type Exchange,
  type LoopbackVendor,
} from './loopback-vendor.js';

/**
 * Bedrock runtime on loopback: `POST /model/{modelId}/converse` and `/converse-stream`.
 * Authentication as AWS checks it: the Authorization header's access key must be known
 * (403 UnrecognizedClientException), and the signature is recomputed over the request as
 * received (its signed headers, path and body; the body's hash recomputed, never taken from the
 * request) with the same maintained signer, `@smithy/signature-v4` (403
 * InvalidSignatureException on any difference, or a date more than five minutes off). Errors
 * carry `x-amzn-errortype`. The request is validated as Converse does (ValidationException):
 * only Converse's fields (and inferenceConfig's), turns start with user and alternate, no blank text, tool blocks need a toolConfig, every
 * toolResult answers an earlier toolUse. A stream is AWS's binary event stream, encoded by
 * AWS's codec, one frame per write; the `exception` fault sends an exception frame.
 */
export const AWS_ENV = {
  AWS_ACCESS_KEY_ID: 'AKIAMOCKBEDROCK00001',
  AWS_SECRET_ACCESS_KEY: 'mock/secret/key/for/bedrock/tests/000000',
};
export const BEDROCK_REGION = 'eu-central-1';

const codec = new EventStreamCodec(
  (bytes) => new TextDecoder().decode(bytes),
  (text) => new TextEncoder().encode(text),
);

const TYPES: Record<number, string> = {
  400: 'ValidationException',
  403: 'AccessDeniedException',
  404: 'ResourceNotFoundException',
  408: 'ModelTimeoutException',
  424: 'ModelErrorException',
  429: 'ThrottlingException',
  500: 'InternalServerException',
  503: 'ServiceUnavailableException',
};

const awsError = (status: number, type: string, message: string) => ({
  status,
  body: { message },
  headers: { 'x-amzn-errortype': `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/` },
});

const signer = (secretAccessKey: string, region: string) =>
  new SignatureV4({
    service: 'bedrock',
    region,
    credentials: { accessKeyId: AWS_ENV.AWS_ACCESS_KEY_ID, secretAccessKey },
    sha256: Sha256,
  });

/** `20261124T081500Z` as a Date. */
const amzDate = (v: string): Date =>
  new Date(
    `${v.slice(0, 4)}-${v.slice(4, 6)}-${v.slice(6, 8)}T${v.slice(9, 11)}:${v.slice(11, 13)}:${v.slice(13, 15)}Z`,
  );

async function verify(x: Exchange, secretAccessKey: string, region: string) {
  const auth = String(x.req.headers.authorization ?? '');
  const m =
    /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/bedrock\/aws4_request, SignedHeaders=([^,]+), Signature=[0-9a-f]{64}$/.exec(
      auth,
    );
  if (!m || m[1] !== AWS_ENV.AWS_ACCESS_KEY_ID)
    return awsError(403, 'UnrecognizedClientException', 'The security token included in the request is invalid.');
  const date = String(x.req.headers['x-amz-date'] ?? '');
  // AWS refuses a signature more than five minutes from its own clock.
  if (!/^\d{8}T\d{6}Z$/.test(date) || Math.abs(Date.now() - amzDate(date).getTime()) > 5 * 60_000)
    return awsError(403, 'InvalidSignatureException', 'Signature expired or its date is not in the AWS format.');
  const headers: Record<string, string> = {};
  for (const name of m[4]!.split(';')) {
    // The body's hash is the signer's to compute from the body received, not the client's claim.
    if (name === 'x-amz-content-sha256') continue;
    const value = x.req.headers[name];
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(',') : value;
  }
  const rawPath = (x.req.url ?? '/').split('?')[0]!;
  const host = String(x.req.headers.host ?? '');
  const recomputed = await signer(secretAccessKey, m[3]!).sign(
    {
      method: x.req.method ?? 'POST',
      protocol: 'http:',
      hostname: host.split(':')[0]!,
      path: rawPath,
      query: {},
      headers,
      body: x.raw,
    },
    { signingDate: amzDate(date) },
  );
  if (m[3] !== region || recomputed.headers.authorization !== auth)
    return awsError(
      403,
      'InvalidSignatureException',
      'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method.',
    );
  return null;
}

/** Converse's request fields; AWS refuses any other (and the inference settings' others). */
const CONVERSE_FIELDS = new Set([
  'messages',
  'system',
  'inferenceConfig',
  'toolConfig',
  'guardrailConfig',
  'additionalModelRequestFields',
  'promptVariables',
  'additionalModelResponseFieldPaths',
  'requestMetadata',
  'performanceConfig',
  'serviceTier',
  'outputConfig',
]);
const INFERENCE_FIELDS = new Set(['maxTokens', 'temperature', 'topP', 'stopSequences']);

function invalid(body: Json): string | null {
  const unknown = [
    ...Object.keys(body).filter((k) => !CONVERSE_FIELDS.has(k)),
    ...Object.keys(body.inferenceConfig ?? {})
      .filter((k) => !INFERENCE_FIELDS.has(k))
      .map((k) => `inferenceConfig.${k}`),
  ];
  if (unknown.length > 0) return `1 validation error detected: extraneous key [${unknown[0]}] is not permitted`;
  if (!Array.isArray(body.messages) || body.messages.length === 0) return 'messages: must not be empty';
  if (typeof body.inferenceConfig?.maxTokens !== 'number') return 'inferenceConfig.maxTokens: expected a number';
  const used = new Set<string>();
  let expect = 'user';
  for (const m of body.messages as Json[]) {
    if (m?.role !== expect) return 'A conversation must alternate between user and assistant roles.';
    expect = expect === 'user' ? 'assistant' : 'user';
    for (const c of (m.content ?? []) as Json[]) {
      if ('text' in c && (typeof c.text !== 'string' || c.text.trim() === ''))
        return 'The text field in the ContentBlock object is blank.';
      if ((c.toolUse || c.toolResult) && !body.toolConfig)
        return 'The toolConfig field must be defined when using toolUse and toolResult content blocks.';
      const id = c.toolUse?.toolUseId ?? c.toolResult?.toolUseId;
      if (id !== undefined && !/^[a-zA-Z0-9_-]{1,64}$/.test(String(id)))
        return `1 validation error detected: Value '${String(id)}' at 'toolUseId' failed to satisfy constraint: Member must have length less than or equal to 64 and satisfy regular expression pattern: [a-zA-Z0-9_-]+`;
      if (c.toolUse) used.add(String(c.toolUse.toolUseId));
      if (c.toolResult && !used.has(String(c.toolResult.toolUseId)))
        return 'The toolResult blocks do not match the toolUse blocks of the previous turn.';
    }
  }
  return null;
}

const textOf = (content: unknown): string =>
  (Array.isArray(content) ? content : [])
    .map((c: Json) => (typeof c?.text === 'string' ? c.text : ''))
    .filter(Boolean)
    .join(' ');

const frame = (type: string, payload: Json, messageType = 'event'): Uint8Array =>
  codec.encode({
    headers: {
      ':message-type': { type: 'string', value: messageType },
      [messageType === 'event' ? ':event-type' : ':exception-type']: { type: 'string', value: type },
      ':content-type': { type: 'string', value: 'application/json' },
    },
    body: new TextEncoder().encode(JSON.stringify({ ...payload, p: 'abcdefghij' })),
  });

export function startMockBedrock(options: { secretAccessKey?: string; region?: string } = {}): Promise<LoopbackVendor> {
  const secret = options.secretAccessKey ?? AWS_ENV.AWS_SECRET_ACCESS_KEY;
  const region = options.region ?? BEDROCK_REGION;
  return startLoopbackVendor({
    route(method, url) {
      const m = /^\/model\/([^/]+)\/(converse|converse-stream)$/.exec(url.pathname);
      return method === 'POST' && m ? { model: decodeURIComponent(m[1]!), stream: m[2] === 'converse-stream' } : null;
    },
    authenticate: (x) => verify(x, secret, region),
    error: (status) => awsError(status, TYPES[status] ?? 'InternalServerException', `mock fault: status ${status}`),
    answer(x) {
      const body = x.body;
      const problem = invalid(body);
      if (problem) return send(x.res, awsError(400, 'ValidationException', problem));
      const messages = body.messages as Json[];
      const last = messages.at(-1)!;
      const lastUser = [...messages].reverse().find((m) => m.role === 'user' && textOf(m.content) !== '');
      const reply = compose({
        promptText: [textOf(body.system), ...messages.map((m) => textOf(m.content))].join(' '),
        lastUserText: textOf(lastUser?.content),
        endsWithUserText: last.role === 'user' && textOf(last.content) !== '',
        toolName: body.toolConfig?.tools?.[0]?.toolSpec?.name,
        maxTokens: body.inferenceConfig.maxTokens,
        fault: x.fault,
      });
      const usage = converseUsageOf(reply, x.fault?.kind === 'cache' ? x.fault.usage : undefined);
      const stopReason = reply.tool ? 'tool_use' : reply.truncated ? 'max_tokens' : 'end_turn';
      const toolUseId = 'tooluse_mock1';
      if (!x.stream)
        return send(x.res, {
          status: 200,
          body: {
            output: {
              message: {
                role: 'assistant',
                content: reply.tool
                  ? [{ toolUse: { toolUseId, name: reply.tool, input: reply.input ?? TOOL_INPUT } }]
                  : [{ text: reply.pieces.join('') }],
              },
            },
            stopReason,
            usage,
            metrics: { latencyMs: 12 },
          },
        });
      if (x.fault?.kind === 'exception')
        return writePieces(x, 'application/vnd.amazon.eventstream', [
          frame(x.fault.type, { message: 'Too many requests, please wait before trying again.' }, 'exception'),
        ]);
      const frames: Uint8Array[] = [];
      frames.push(frame('messageStart', { role: 'assistant' }));
      if (reply.tool) {
        frames.push(
          frame('contentBlockStart', { contentBlockIndex: 0, start: { toolUse: { toolUseId, name: reply.tool } } }),
        );
        for (const piece of inputPieces(reply))
          frames.push(frame('contentBlockDelta', { contentBlockIndex: 0, delta: { toolUse: { input: piece } } }));
      } else {
        for (const piece of reply.pieces)
          frames.push(frame('contentBlockDelta', { contentBlockIndex: 0, delta: { text: piece } }));
      }
      frames.push(frame('contentBlockStop', { contentBlockIndex: 0 }));
      frames.push(frame('messageStop', { stopReason }));
      frames.push(frame('metadata', { usage, metrics: { latencyMs: 12 } }));
      return writePieces(x, 'application/vnd.amazon.eventstream', frames);
    },
  });
}
