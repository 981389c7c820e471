// main.ts's first import, ahead of telemetry: libuv reads UV_THREADPOOL_SIZE once, when its pool first starts, and
// any file read (OpenTelemetry's resource detection, the first log file) starts it. An operator's own value wins.
import { threadPoolSize } from './concurrency';

process.env.UV_THREADPOOL_SIZE ||= String(threadPoolSize(process.env));
