import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";

/**
 * The e2e tests spawn bin/troupe.js, which runs dist/: build it first so they test the code as it is
 * now (keeping an earlier build's chunks, which a CLI started by a concurrent run may still import).
 */
export default function setup(): void {
  execFileSync(process.execPath, [fileURLToPath(new URL("../scripts/build.mjs", import.meta.url)), "--keep-stale"], { stdio: "inherit" });
}
