export { freePort } from './free-port';
export { scaled, timeScale } from './time-scale';
export { waitFor, httpOk, type WaitForOptions } from './wait-for';
export { startNats, type TestNats } from './nats-server';
export { startNatsCluster, type TestNatsCluster, type TestNatsNode } from './nats-cluster';
export { createDatabase, testPgUrl } from './database';
export { createBucket, testS3Config, s3Env, testMinioClient, type TestS3Config } from './s3-bucket';
export { startServiceProcess, warningLines, type ServiceProcess, type ServiceProcessOptions } from './service-process';
export { repoRoot } from './paths';
export { serviceIdentities, type ServiceIdentities } from './service-identities';
export { makePng } from './png';
export { startInternalStub, startSettingsStub, type InternalStub, type StubAnswer } from './internal-stub';
export { startJobHarness, type JobHarness } from './job-harness';
export { ffprobe, makeVideo, writeVideo, type ProbedStream, type VideoSpec } from './video';

export { listen } from './listen';
export { startPostgresCluster, type PostgresCluster, type PostgresClusterOptions } from './postgres-cluster';
export { createTestCa, issueServerCertificate, type TestCa, type TestServerCertificate } from './tls-certs';
export { startFaultProxy, type FaultMode, type FaultProxy } from './fault-proxy';
