// Preloaded (`node --require`) into service processes started by startServiceProcess. Those processes get an
// IPC channel from the test process; when the test process dies without stopping them (jest SIGKILLs a worker
// that does not exit), the channel closes and the service exits instead of lingering as a stray server.
process.on('disconnect', () => process.kill(process.pid, 'SIGKILL'));
// The listener must not keep a service alive that wants to exit on its own.
if (process.channel) process.channel.unref();
