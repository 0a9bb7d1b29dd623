/**
 * A module-level zod schema built at its first use instead of when its module loads. Building a zod
 * schema makes one object per node (a message schema is dozens), and a command loads many modules whose
 * schemas it never uses: a cold `troupe agent -m` spent ~6% of its CPU building schemas at module load
 * (test/bench/startup.bench.ts). The value stands for the schema wherever a schema goes (parse,
 * safeParse, .optional(), .extend(), inside another schema, instanceof): it forwards to the schema,
 * built on the first touch and kept.
 *
 * Use it for a module's top-level schemas, and for the built-in tools' parameters (their JSON Schema is
 * made ahead, so a tool's zod schema is built at its first call). Metadata (.describe(), .meta()) goes
 * inside the builder: registries key by object, and the stand-in is not the schema itself.
 */
export function lazySchema<T extends object>(build: () => T): T {
  let built: T | undefined;
  const real = (): T => (built ??= build());
  return new Proxy(Object.create(null) as T, {
    get: (_, key) => Reflect.get(real(), key),
    set: (_, key, value) => Reflect.set(real(), key, value),
    has: (_, key) => Reflect.has(real(), key),
    getPrototypeOf: () => Reflect.getPrototypeOf(real()),
    ownKeys: () => Reflect.ownKeys(real()),
    // Reported configurable: the stand-in itself holds no properties, and a proxy may not report a
    // property as fixed that its target lacks.
    getOwnPropertyDescriptor: (_, key) => {
      const d = Reflect.getOwnPropertyDescriptor(real(), key);
      return d && { ...d, configurable: true };
    },
    defineProperty: (_, key, d) => Reflect.defineProperty(real(), key, d),
    deleteProperty: (_, key) => Reflect.deleteProperty(real(), key),
  });
}
