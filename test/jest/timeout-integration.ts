// `testTimeout` is a global-only jest option and is ignored inside `projects`; set it per project here.
jest.setTimeout(60_000);
