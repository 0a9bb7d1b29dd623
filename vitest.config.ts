import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // End-to-end tests drive several real processes (each start compiles TypeScript through tsx);
    // on a loaded 2-core machine a chain of them takes a minute. Tests wait on events, so a passing
    // test is not slowed by this ceiling.
    testTimeout: 120_000,
    hookTimeout: 60_000,
    pool: "forks",
  },
});
