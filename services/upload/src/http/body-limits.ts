import type { Request, Response } from 'express';
import { callerKey, type Principal } from '@dam/auth-tokens';
import { tooManyUploads } from '../domain/upload.errors';

/**
 * Request bodies at once per user or API key, shared by every route that reads one (Upload Asset, Replace, tus
 * POST and PATCH, and a repeat read only to be compared with its kept answer): past `max`, 429 before a byte is read.
 */
export interface PrincipalSlots {
  /** Takes a slot until the response closes; throws 429 (and closes the connection after it) when none is free. */
  enter(principal: Principal, req: Request, res: Response): void;
}

export function principalSlots(max: number): PrincipalSlots {
  const running = new Map<string, number>();
  const entered = new WeakSet<Response>();
  return {
    enter(principal, req, res) {
      if (max <= 0 || entered.has(res)) return;
      const who = callerKey(principal);
      const mine = running.get(who) ?? 0;
      if (mine >= max) {
        closeAfterAnswer(req, res); // the body is not read: spare the client sending it
        throw tooManyUploads(max);
      }
      running.set(who, mine + 1);
      entered.add(res);
      res.once('close', () => {
        const left = (running.get(who) ?? 1) - 1;
        if (left > 0) running.set(who, left);
        else running.delete(who);
      });
    },
  };
}

/** Whether a request carries a body (a tus creation or HEAD without one takes no upload slot). */
export const hasBody = (req: Request): boolean =>
  req.headers['transfer-encoding'] !== undefined || (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0');

/** How long a connection answered early keeps reading (and dropping) the rest of its request body. */
const LINGER_MS = 2_000;

/**
 * An answer given before the request body was read (429, 413, 408): the connection closes after it, with a
 * lingering close (as web servers do): the server sends its answer and its FIN but keeps reading and dropping what
 * the client is still sending, for at most LINGER_MS. Closing at once makes the kernel answer that data with a
 * reset, and a client busy writing (fetch with a streamed body) then fails with EPIPE before it reads the answer.
 */
export function closeAfterAnswer(req: Request, res: Response): void {
  res.setHeader('Connection', 'close');
  const socket = req.socket as Request['socket'] & { destroySoon?: () => void };
  // Node closes a `Connection: close` response's socket with destroySoon() once the response is sent.
  socket.destroySoon = () => {
    socket.end();
    const timer = setTimeout(() => socket.destroy(), LINGER_MS);
    timer.unref();
    socket.once('close', () => clearTimeout(timer));
    socket.once('end', () => socket.destroy());
    req.resume();
    socket.resume();
  };
}
