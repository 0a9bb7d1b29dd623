import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // The e2e tests spawn the CLI as users run it (bin/troupe.js → dist/): built once before the run.
    globalSetup: ["test/global-setup.ts"],
    // End-to-end tests drive several real processes;
    // on a loaded 2-core machine a chain of them takes a minute. Tests wait on events, so a passing
    // test is not slowed by this ceiling.
    testTimeout: 120_000,
    hookTimeout: 60_000,
    pool: "forks",
  },
});
