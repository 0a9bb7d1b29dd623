/**
 * What the in-process benches take from troupe, compiled by scripts/build-bench.mjs into
 * dist-bench/troupe-bench.cjs as the CLI is into dist/troupe.cjs (test/bench/harness.ts loads it).
 * A bench talks only to the objects these make (the Daemon, its store, tree and bus; a store), never
 * to a second copy of troupe's modules run from source.
 */
export { loadConfig } from "../../src/config/index.js";
export { createDaemon } from "../../src/runtime.js";
// The store's write path and a session meta read, timed by themselves (durability, store-ops).
export { sessionMetaSchema } from "../../src/store/sessions.js";
export { encodeOps } from "../../src/store/encoding.js";
export { openStore } from "../../src/store/store.js";
// The store's size on disk and history.jsonl's appends (storage).
export { createMemoryFiles } from "../../src/memory/files.js";
export { storeSize } from "../../src/store/repair.js";
