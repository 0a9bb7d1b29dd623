/**
 * A module-level zod schema built at its first use instead of when its module loads. Building a zod
 * schema makes one object per node (a message schema is dozens), and a command loads many modules whose
 * schemas it never uses: a cold `troupe agent -m` spent ~6% of its CPU building schemas at module load
 * (test/bench/startup.bench.ts). The value stands for the schema wherever a schema goes (parse,
 * safeParse, .optional(), .extend(), inside another schema, instanceof): it forwards to the schema,
 * built on the first touch and kept.
 *
 * Use it for a module's top-level schemas; a schema built inside a function is already built when used.
 * Metadata registries (z.globalRegistry, .meta()) key by object and would see the schema, not this
 * stand-in: leave schemas that carry metadata or are turned into JSON Schema as they are.
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
