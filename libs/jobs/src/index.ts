export * from './contract';
export { FINAL_REPORT_WAIT_MS, reportPacingOf, resultReportId, startJobReporter, workerId, type JobReporter, type ReportPacing } from './reporter';
export { jobRuntime, jobWorker, type JobConsumerOptions, type JobHandler, type JobRun, type JobRuntime, type JobWorkerConfig } from './worker';
