import { createRequire } from "node:module";
import { IncompleteInstallError } from "./errors.js";

const load = createRequire(import.meta.url);

/**
 * A module loaded at its first use instead of at start-up, and kept once loaded. For a Node built-in
 * (node:https with tls, node:child_process with net, dgram and cluster, node:zlib, node:dns...: each
 * costs a few ms and some RSS to load, and a one-shot turn that calls a model over http://, runs no
 * command and gets no compressed reply uses none of them), and for a package a command seldom needs,
 * loaded from node_modules and kept out of the CLI's bundle: the YAML parser reads only a skill
 * frontmatter that is more than one-line `key: value` pairs (bundled, its 72 modules were evaluated
 * at every start, 0.35–0.4 ms of a cold `agent -m` measured, and their code was in its code cache).
 * A package that does not load throws IncompleteInstallError: its callers' own handling (a YAML
 * error recovered from) must not take it for theirs.
 */
export function lazyRequire<T>(id: string): () => T {
  let mod: T | undefined;
  return () => (mod ??= loaded<T>(id));
}

function loaded<T>(id: string): T {
  try {
    return load(id) as T;
  } catch (err) {
    if (id.startsWith("node:")) throw err;
    throw new IncompleteInstallError(id, err);
  }
}
