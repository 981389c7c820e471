// The production form through its front door (issue 31): `pnpm test:production-form` (deploy/production-form/test:
// up, these tests, down). Not part of the project's test command: it needs the images, root, podman and port 443.
// Against a form already started with deploy/production-form/up: `jest -c test/production-form/jest.config.js`.
const path = require('node:path');
const root = path.join(__dirname, '..', '..');
const transform = { '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022', parser: { syntax: 'typescript' } } }] };
module.exports = {
  rootDir: root,
  displayName: 'production-form',
  testEnvironment: 'node',
  transform,
  moduleFileExtensions: ['ts', 'js', 'json'],
  testMatch: ['<rootDir>/test/production-form/**/*.test.ts'],
  testTimeout: 300_000,
  verbose: true,
};
