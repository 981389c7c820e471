import type { RequestHandler, Response } from 'express';

const READS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Holds the end of every write's answer until `before` resolves (at most `maxWaitMs`): the notices of the assets it
 * changed reach the gateways first (issue 33), so no gateway serves a Get Data from before the write once its caller
 * has the answer. Reads pass untouched.
 */
export function answerWritesAfter(before: () => Promise<void>, maxWaitMs = 1000): RequestHandler {
  return (req, res, next) => {
    if (READS.has(req.method)) {
      next();
      return;
    }
    const end = res.end.bind(res) as (...args: unknown[]) => Response;
    res.end = ((...args: unknown[]) => {
      let timer: NodeJS.Timeout | undefined;
      const bounded = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, maxWaitMs);
        timer.unref();
      });
      void Promise.race([before().catch(() => undefined), bounded]).then(() => {
        clearTimeout(timer);
        end(...args);
      });
      return res;
    }) as Response['end'];
    next();
  };
}
