import { createRequire } from "node:module";

const load = createRequire(import.meta.url);

/**
 * A Node built-in module loaded at its first use instead of at start-up: node:https (with tls),
 * node:child_process (with net, dgram and cluster), node:zlib, node:dns... each costs a few ms and
 * some RSS to load, and a one-shot turn that calls a model over http://, runs no command and
 * gets no compressed reply uses none of them.
 */
export function lazyBuiltin<T>(id: `node:${string}`): () => T {
  let mod: T | undefined;
  return () => (mod ??= load(id) as T);
}

/**
 * A package loaded from node_modules at its first use, and kept out of the CLI's bundle: for one a
 * command seldom needs. (The YAML parser reads only a skill frontmatter that is more than one-line
 * `key: value` pairs; bundled, its 72 modules ran at every start: ~0.8 ms of a cold `agent -m`.)
 */
export function lazyPackage<T>(id: string): () => T {
  let mod: T | undefined;
  return () => (mod ??= load(id) as T);
}
