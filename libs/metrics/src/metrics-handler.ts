import type { IncomingMessage, ServerResponse } from 'node:http';
import { renderMetrics } from './registry';

/** Express (or plain node) handler answering the registry in the Prometheus text format. */
export function metricsHandler(): (req: IncomingMessage, res: ServerResponse, next?: (err?: unknown) => void) => void {
  return (_req, res, next) => {
    renderMetrics().then(
      ({ contentType, body }) => {
        res.statusCode = 200;
        res.setHeader('Content-Type', contentType);
        res.setHeader('Cache-Control', 'no-store');
        res.end(body);
      },
      (error: unknown) => {
        if (next) next(error);
        else {
          res.statusCode = 500;
          res.end();
        }
      },
    );
  };
}
