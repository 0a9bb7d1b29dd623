import { describe, expect, it } from "vitest";
import { newTurnId } from "../../actors/conversation.js";

describe("turn ids", () => {
  it("sort by time (base-36, fixed width) and end in 8 random hex digits; ids made in the same millisecond differ", () => {
    const at = Date.UTC(2026, 0, 1);
    const ids = Array.from({ length: 2_000 }, () => newTurnId(at));
    for (const id of ids) expect(id).toMatch(/^[0-9a-z]{9}-[0-9a-f]{8}$/);
    expect(new Set(ids).size).toBe(ids.length);
    expect(newTurnId(at) < newTurnId(at + 1)).toBe(true);
    expect(ids[0]!.slice(0, 9)).toBe(at.toString(36).padStart(9, "0"));
  });
});
