import type { Plugin } from '@hapi/hapi';

/**
 * Bodies over the limit are answered `413 body_too_large`, then the connection is closed.
 *
 * hapi reads bodies with @hapi/wreck, which destroys the request stream the moment a body streamed
 * without content-length (chunked) passes maxBytes. That also destroys the socket, so the client
 * would see a reset instead of the 413. Here the destroy is held back until the answer is written;
 * reading stops at once (nothing more is buffered), and the 413 carries `connection: close`
 * (payloadFailAction) so Node closes the socket instead of draining the rest of the body.
 * hapi also drains an unread body before answering a payload error; over the limit that would
 * read an endless stream until the request timeout, so the request is marked as no longer
 * pending (hapi 21's `_isPayloadPending`) and the 413 goes out at once.
 */
export const bodyLimit: Plugin<Record<string, never>> = {
  name: 'svc-body-limit',
  register(server) {
    server.ext('onRequest', (request, h) => {
      const { req, res } = request.raw;
      if (req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] === undefined) return h.continue;
      const destroy = req.destroy.bind(req);
      let held = false;
      req.destroy = ((error?: Error) => {
        if (held || res.writableFinished || req.socket?.destroyed) return destroy(error);
        held = true;
        (request as unknown as { _isPayloadPending: boolean })._isPayloadPending = false;
        req.unpipe();
        req.pause();
        const finish = () => destroy(error);
        res.once('finish', finish);
        res.once('close', finish);
        return req;
      }) as typeof req.destroy;
      return h.continue;
    });
  },
};
