import type { Server as NodeServer } from 'node:http';
import type { Socket } from 'node:net';
import { AppError, invalidField } from '../errors/app-error.js';
import { renderError } from '../errors/render.js';
import { randomIds } from '../lib/ids.js';
import { API_VERSION } from './front-door.js';

/**
 * Requests Node cannot hand to hapi (a malformed request line or header, oversized headers, a
 * client too slow to send its headers) are answered here, from the same catalogue and with the
 * same x-request-id and svc-version headers as every other answer, then the socket is closed.
 * This replaces hapi's bare "400 Bad Request".
 */
export function answerClientErrors(
  listener: NodeServer,
  options: { baseUrl: () => string; production: boolean },
): void {
  listener.removeAllListeners('clientError');
  listener.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
    if (!socket.writable || (socket as Socket & { _httpMessage?: unknown })._httpMessage) {
      socket.destroy();
      return;
    }
    const error =
      err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? new AppError('request_timeout')
        : err.code === 'HPE_HEADER_OVERFLOW'
          ? new AppError('headers_too_large')
          : invalidField(null, 'the request is not valid HTTP');
    const requestId = randomIds.id('req');
    const body = JSON.stringify(
      renderError(error, { baseUrl: options.baseUrl(), requestId, production: options.production }),
    );
    const reason =
      { 400: 'Bad Request', 408: 'Request Timeout', 431: 'Request Header Fields Too Large' }[error.status] ??
      'Bad Request';
    socket.end(
      [
        `HTTP/1.1 ${error.status} ${reason}`,
        'content-type: application/json; charset=utf-8',
        `content-length: ${Buffer.byteLength(body)}`,
        `x-request-id: ${requestId}`,
        `svc-version: ${API_VERSION}`,
        'connection: close',
        '',
        body,
      ].join('\r\n'),
    );
  });
}
