/** The slice of a pino logger the events code needs (a pino `Logger` fits). */
export interface EventLogger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export function errorFields(error: unknown): { err: { message: string; name?: string; stack?: string } } {
  if (error instanceof Error) return { err: { message: error.message, name: error.name, stack: error.stack } };
  return { err: { message: String(error) } };
}
