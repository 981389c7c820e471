// The long fault, soak and load runs (issue 14): `pnpm test:soak` (one file: `pnpm test:soak <path>`). Not part of
// the project's test command: they take minutes each. Short versions of the same scenarios run in test/faults/.
const path = require('node:path');
const root = path.join(__dirname, '..', '..');
const transform = { '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022', parser: { syntax: 'typescript' } } }] };
module.exports = {
  rootDir: root,
  displayName: 'soak',
  testEnvironment: 'node',
  transform,
  moduleFileExtensions: ['ts', 'js', 'json'],
  testMatch: ['<rootDir>/test/soak/**/*.soak.test.ts'],
  globalSetup: '<rootDir>/libs/testing/src/global-setup.ts',
  globalTeardown: '<rootDir>/libs/testing/src/global-teardown.ts',
  setupFilesAfterEnv: ['<rootDir>/test/soak/timeout.ts'],
};
