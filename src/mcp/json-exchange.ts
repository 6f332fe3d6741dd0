import type { IncomingHttpHeaders } from 'node:http';
import {
  isInitializeRequest,
  isJsonContentType,
  isJSONRPCRequest,
  parseJSONRPCMessage,
  SUPPORTED_PROTOCOL_VERSIONS,
  type AuthInfo,
  type JSONRPCMessage,
  type Transport,
} from '@modelcontextprotocol/server';

/**
 * One 2025-11-25 request without a session, answered as JSON, served on the SDK's server without
 * the web-standard bridge: the parsed message goes straight to the server, and its answer comes
 * back as the message itself, for http.ts to write. The SDK's web-standard transport made a web
 * `Request` of the Node request, and a web `Response` of the answer that was then read back,
 * for every call.
 * Rules:
 * - Only the plainest request takes this path (`fits`): a POST of one JSON-RPC request (not a
 *   batch, not a notification, not `initialize`) whose `Accept`, `Content-Type` and
 *   `MCP-Protocol-Version` the web-standard transport would accept, answered as JSON (no
 *   progress token). Everything else is served by that transport, refusals included, so that
 *   every error is the SDK's own.
 * - The answer is the same message the web-standard transport would answer: what the server
 *   sends for the request's id. Notifications the server sends meanwhile are dropped, as that
 *   transport drops them from a JSON answer.
 * - It serves one request, once. Closing it before the answer (the caller went away) ends the
 *   wait with no answer, and the server is told the connection closed.
 */
export class JsonExchange implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: Transport['onmessage'];
  #versions: readonly string[] = SUPPORTED_PROTOCOL_VERSIONS;
  #closed = false;
  #used = false;
  #id: unknown;
  #settle: ((answer: JSONRPCMessage | undefined) => void) | undefined;

  /**
   * The request as the web-standard transport would validate it, when it is one this path
   * serves; undefined otherwise (serve it with that transport).
   */
  static fits(headers: IncomingHttpHeaders, body: unknown): JSONRPCMessage | undefined {
    const accept = headers.accept;
    if (typeof accept !== 'string' || !accept.includes('application/json') || !accept.includes('text/event-stream'))
      return undefined;
    if (!isJsonContentType(headers['content-type'] ?? null)) return undefined;
    const version = headers['mcp-protocol-version'];
    if (version !== undefined && (typeof version !== 'string' || !SUPPORTED_PROTOCOL_VERSIONS.includes(version)))
      return undefined;
    if (body === null || typeof body !== 'object' || Array.isArray(body)) return undefined;
    let message: JSONRPCMessage;
    try {
      message = parseJSONRPCMessage(body);
    } catch {
      return undefined;
    }
    if (!isJSONRPCRequest(message) || isInitializeRequest(message)) return undefined;
    return message;
  }

  /** The versions the server supports (it tells its transport when it connects). */
  setSupportedProtocolVersions(versions: string[]): void {
    this.#versions = versions;
  }

  async start(): Promise<void> {}

  /**
   * Hands `message` (from `fits`) to the server; resolves with the server's answer to it (status
   * 200), or undefined when the exchange closed first. A protocol version the server does not
   * support (`fits` checks the SDK's list; a server may be given fewer) is refused as the
   * web-standard transport refuses it: 400, a JSON-RPC error without an id.
   */
  answer(
    message: JSONRPCMessage,
    headers: IncomingHttpHeaders,
    authInfo: AuthInfo,
  ): Promise<{ status: number; message: JSONRPCMessage } | undefined> {
    if (this.#used) throw new Error('a JSON exchange serves one request');
    this.#used = true;
    if (this.#closed) return Promise.resolve(undefined);
    const version = headers['mcp-protocol-version'];
    if (typeof version === 'string' && !this.#versions.includes(version)) {
      const error = `Bad Request: Unsupported protocol version: ${version} (supported versions: ${this.#versions.join(', ')})`;
      this.onerror?.(new Error(error));
      return Promise.resolve({
        status: 400,
        message: { jsonrpc: '2.0', error: { code: -32000, message: error }, id: null } as unknown as JSONRPCMessage,
      });
    }
    this.#id = (message as { id: unknown }).id;
    const answered = new Promise<JSONRPCMessage | undefined>((resolve) => {
      this.#settle = resolve;
    });
    this.onmessage?.(message, { authInfo });
    return answered.then((m) => (m === undefined ? undefined : { status: 200, message: m }));
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if (this.#closed || !('id' in message) || message.id !== this.#id) return;
    if (!('result' in message) && !('error' in message)) return;
    this.#settle?.(message);
    this.#settle = undefined;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#settle?.(undefined);
    this.#settle = undefined;
    this.onclose?.();
  }
}
