// A soak scenario runs for minutes; each test sets its own bound below this one.
jest.setTimeout(30 * 60_000);
