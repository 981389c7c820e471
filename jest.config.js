// One runner for the whole workspace. Projects split by what a test needs:
// unit (pure logic), integration (one service or lib against real infrastructure), e2e (the suite), faults (the
// suite while its infrastructure or its services fail: short versions; the long ones are under test/soak/).
const transform = { '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022', parser: { syntax: 'typescript' } } }] };
const common = { testEnvironment: 'node', transform, moduleFileExtensions: ['ts', 'js', 'json'] };
const infra = {
  globalSetup: '<rootDir>/libs/testing/src/global-setup.ts',
  globalTeardown: '<rootDir>/libs/testing/src/global-teardown.ts',
};
module.exports = {
  projects: [
    {
      ...common,
      displayName: 'unit',
      testMatch: ['<rootDir>/{libs,services,web}/*/test/**/*.unit.test.ts', '<rootDir>/deploy/test/**/*.unit.test.ts', '<rootDir>/test/docs/**/*.unit.test.ts'],
      setupFilesAfterEnv: ['<rootDir>/test/jest/timeout-unit.ts'],
    },
    {
      ...common,
      ...infra,
      displayName: 'integration',
      testMatch: ['<rootDir>/{libs,services}/*/test/**/*.int.test.ts'],
      setupFilesAfterEnv: ['<rootDir>/test/jest/timeout-integration.ts'],
    },
    { ...common, ...infra, displayName: 'e2e', testMatch: ['<rootDir>/test/e2e/**/*.e2e.test.ts'], setupFilesAfterEnv: ['<rootDir>/test/jest/timeout-e2e.ts'] },
    {
      ...common,
      ...infra,
      displayName: 'faults',
      testMatch: ['<rootDir>/test/faults/**/*.faults.test.ts'],
      setupFilesAfterEnv: ['<rootDir>/test/jest/timeout-e2e.ts'],
    },
  ],
};
