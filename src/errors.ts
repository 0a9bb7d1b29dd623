/** Infrastructure failures are typed; the CLI prints `message` as one line and exits with `exitCode`. */
export class TroupeError extends Error {
  readonly exitCode: number = 1;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** A package troupe loads at its first use is not installed (or does not load): its node_modules is incomplete. */
export class IncompleteInstallError extends TroupeError {
  constructor(
    readonly packageName: string,
    cause: unknown,
  ) {
    super(`troupe's installation is incomplete: the package ${packageName} could not be loaded (${cause instanceof Error ? cause.message.split("\n")[0] : String(cause)}); run npm ci in troupe's folder`, { cause });
  }
}

/**
 * An invalid config: one line per problem (key path, what is wrong, what was expected). A problem
 * an environment variable caused (a TROUPE_…__… override) names that variable, not the file.
 */
export class ConfigError extends TroupeError {
  override readonly exitCode = 2;
  constructor(
    readonly file: string,
    readonly problems: string[],
    /** "TROUPE_X__Y=value: x.y: what is wrong", one per problem an override caused. */
    readonly envProblems: string[] = [],
  ) {
    super([...problems.map((p) => `config error in ${file}: ${p}`), ...envProblems.map((p) => `config error in environment variable ${p}`)].join("\n"));
  }
}

/** Another process holds the LevelDB store of this data dir. */
export class StoreLockedError extends TroupeError {
  constructor(
    readonly path: string,
    readonly holderPid: number | undefined,
  ) {
    super(
      holderPid
        ? `another troupe process (pid ${holderPid}) holds ${path}; stop it first or use another TROUPE_HOME`
        : `another troupe process holds ${path}; stop it first or use another TROUPE_HOME`,
    );
  }
}

/** Data read from disk or the wire did not match its schema. */
export class CorruptRecordError extends TroupeError {
  /** The stored record it is about, when it is one (its sublevel, key and what is wrong with it). */
  record?: { sublevel: string; key: string; problem: string };
}
