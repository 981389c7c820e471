import type { Express } from 'express';
import { createHttpApp, finishApp, type ReadinessCheck } from '@dam/http';
import type { Logger } from '@dam/logging';

/** Health endpoints only: conversion works from its consumer; on-demand transforms come later. */
export function buildConversionApp(deps: { logger: Logger; readiness: ReadinessCheck }): Express {
  const app = createHttpApp({ logger: deps.logger, readiness: deps.readiness });
  return finishApp(app, deps.logger);
}
