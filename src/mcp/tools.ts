import { AppError } from '../errors/app-error.js';
import { authorizeSchema, settleSchema, type AuthorizeInput, type SettleInput } from '../gate/schemas.js';
import type { Gate, GateCaller } from '../gate/service.js';

/**
 * The gate's tools at /mcp (docs/mcp-oauth.md): authorize_action, get_action and settle_action, over the
 * same service as the HTTP routes (the same decisions, idempotency and ledger records).
 * Rules:
 * - Arguments are checked with the gate's own schemas; a request the gate cannot judge (bad
 *   arguments, an unknown action, a second settlement) is a tool result with `isError: true`
 *   whose text says what is wrong and how to fix it (its type and fix), never a protocol error.
 * - A deny is a decision, not an error: the action comes back with `decision: "deny"`.
 * - The answer is the action as the HTTP route answers it, as JSON text and structured content.
 */
export interface ToolResult {
  content: Array<{ type: 'text'; text: string }>;
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

const action = { type: 'object', description: 'the action, as POST /v1/actions/authorize answers it' };

export const GATE_TOOLS = [
  {
    name: 'authorize_action',
    title: 'Ask before acting',
    description:
      'Ask the gate before acting (a payment, a deploy, an email). The answer is a decision: allow (with a signed receipt for payments), deny (with signals), or review (a person decides; poll get_action).',
    inputSchema: {
      type: 'object',
      properties: {
        type: {
          type: 'string',
          description:
            'payment, refund, transfer, purchase, email, message, browse, download, deploy, delete, or a dotted custom type',
        },
        summary: { type: 'string' },
        payment: {
          type: 'object',
          properties: { amount: { type: 'integer' }, currency: { type: 'string' }, merchant: { type: 'string' } },
        },
        target: { type: 'object', properties: { domain: { type: 'string' } } },
        session: { type: 'object', properties: { id: { type: 'string' } } },
        idempotencyKey: { type: 'string' },
        metadata: { type: 'object' },
        challenge: {
          type: 'object',
          description:
            'in place of payment: a 402 payment challenge (x402 PAYMENT-REQUIRED or MPP Payment) as received',
          properties: { scheme: { type: 'string', enum: ['x402', 'mpp'] }, value: { type: 'string' } },
        },
        ap2: {
          type: 'object',
          description: 'a closed AP2 mandate with its key-binding JWT, and the id of the refused action it follows',
          properties: { mandate: { type: 'string' }, refusal: { type: 'string' } },
        },
        receipts: {
          type: 'array',
          description: "receipts in the protocols' shapes beside svc's own, for a payment",
          items: { type: 'string', enum: ['ap2', 'acp'] },
        },
        acp: {
          type: 'object',
          description: 'the ACP checkout session an allowance is for',
          properties: { checkoutSessionId: { type: 'string' }, merchantId: { type: 'string' } },
        },
      },
      required: ['type', 'summary'],
    },
    outputSchema: action,
  },
  {
    name: 'get_action',
    title: 'Read an action',
    description:
      "One of this agent's own actions, with its current decision (a review turns into allow or deny once a person decides).",
    inputSchema: { type: 'object', properties: { id: { type: 'string', description: 'act_…' } }, required: ['id'] },
    outputSchema: action,
  },
  {
    name: 'settle_action',
    title: 'Settle an action',
    description: 'Report how an allowed action ended: completed, failed or cancelled, with the amount actually spent.',
    inputSchema: {
      type: 'object',
      properties: {
        id: { type: 'string' },
        status: { type: 'string', enum: ['completed', 'failed', 'cancelled'] },
        amount: { type: 'integer' },
      },
      required: ['id', 'status'],
    },
    outputSchema: action,
  },
] as const;

export const GATE_TOOL_NAMES = new Set<string>(GATE_TOOLS.map((t) => t.name));

/** A refusal as a tool result the model can read and act on. */
export function refusal(err: AppError): ToolResult {
  const fields = (err.details.errors ?? []).map((e) => `${e.field ?? 'the request'}: ${e.message}`);
  return {
    isError: true,
    content: [
      {
        type: 'text',
        text: `${err.type}: ${err.message}${fields.length > 0 ? ` (${fields.join('; ')})` : ''}\nFix: ${err.fix}`,
      },
    ],
    structuredContent: { error: { type: err.type, message: err.message, fix: err.fix, ...err.details } },
  };
}

const answer = (value: object): ToolResult => ({
  content: [{ type: 'text', text: JSON.stringify(value) }],
  structuredContent: value as Record<string, unknown>,
});

type Schema<T> = {
  validate(
    v: unknown,
    o: object,
  ): { value: T; error?: { details: Array<{ path: Array<string | number>; message: string }> } };
};

/** Arguments checked as the HTTP route checks its body: the first field at fault names the type. */
function checked<T>(
  schema: Schema<T>,
  args: unknown,
  byField: Record<string, 'invalid_status' | 'invalid_amount'> = {},
): T {
  const { value, error } = schema.validate(args ?? {}, { abortEarly: false });
  if (error) {
    const errors = error.details.map((d) => ({ field: d.path.join('.') || null, message: d.message }));
    throw new AppError(byField[String(error.details[0]?.path[0])] ?? 'invalid_request', { details: { errors } });
  }
  return value;
}

export async function callGateTool(
  gate: Gate,
  c: GateCaller,
  name: string,
  args: Record<string, unknown> | undefined,
): Promise<ToolResult> {
  try {
    switch (name) {
      case 'authorize_action': {
        const input = checked<AuthorizeInput>(authorizeSchema, args);
        return answer((await gate.authorize(c, input, { sessionId: input.session?.id })).action);
      }
      case 'get_action': {
        const id = typeof args?.id === 'string' ? args.id : '';
        return answer(await gate.get(c, id));
      }
      case 'settle_action': {
        const { id, ...rest } = (args ?? {}) as { id?: unknown } & Record<string, unknown>;
        const input = checked<SettleInput>(settleSchema, rest, { status: 'invalid_status', amount: 'invalid_amount' });
        return answer(await gate.settle(c, typeof id === 'string' ? id : '', input));
      }
      default:
        throw new AppError('not_found', { message: `No tool ${name}.` });
    }
  } catch (err) {
    if (err instanceof AppError && err.status < 500) return refusal(err);
    throw err;
  }
}
