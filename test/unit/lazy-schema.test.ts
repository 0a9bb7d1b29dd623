import { describe, expect, it } from "vitest";
import { z } from "zod";
import { lazySchema } from "../../src/lazy-schema.js";

describe("lazySchema", () => {
  it("builds the schema at its first use, once", () => {
    let builds = 0;
    const s = lazySchema(() => (builds++, z.object({ a: z.string() })));
    expect(builds).toBe(0);
    expect(s.parse({ a: "x" })).toEqual({ a: "x" });
    expect(s.safeParse({ a: 1 }).success).toBe(false);
    expect(builds).toBe(1);
  });

  it("stands for the schema inside other schemas and their methods", () => {
    const inner = lazySchema(() => z.object({ kind: z.literal("a"), n: z.number().int() }));
    const other = z.object({ kind: z.literal("b") });
    const union = z.discriminatedUnion("kind", [inner, other]);
    expect(union.parse({ kind: "a", n: 2 })).toEqual({ kind: "a", n: 2 });
    expect(() => union.parse({ kind: "a", n: 2.5 })).toThrow(z.ZodError);
    const wrapped = z.object({ x: inner.optional(), list: z.array(inner) });
    expect(wrapped.parse({ list: [{ kind: "a", n: 1 }] })).toEqual({ list: [{ kind: "a", n: 1 }] });
    const extended = inner.omit({ n: true }).extend({ m: z.string() });
    expect(extended.parse({ kind: "a", m: "y" })).toEqual({ kind: "a", m: "y" });
    expect(inner).toBeInstanceOf(z.ZodObject);
    expect(inner instanceof z.ZodType).toBe(true);
    expect(Object.keys(inner.shape)).toEqual(["kind", "n"]);
  });

  it("reports errors at the same paths as the schema itself", () => {
    const s = lazySchema(() => z.object({ a: z.array(z.number()) }));
    const r = s.safeParse({ a: [1, "2"] });
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]?.path).toEqual(["a", 1]);
  });
});
