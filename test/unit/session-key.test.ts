import { describe, expect, it } from "vitest";
import { InvalidSessionKeyError, KEY_END, parseSessionKey, SESSION_KEY_MAX, sessionKeySchema } from "../../src/session-key.js";

describe("session keys", () => {
  it("takes the keys troupe makes and printable text of any script", () => {
    for (const key of ["cli:direct", "api:me", "telegram:-1001234567890", "subagent:0b6a2d1e-5f4c-4a51-9d0e-2f3c1b7a8e90", "api:café ☕", "api:日本語", "api:a/b?c=%20", "x", "api:🎉", "k".repeat(SESSION_KEY_MAX)]) {
      expect(sessionKeySchema.safeParse(key).success, key).toBe(true);
      expect(parseSessionKey(key)).toBe(key);
    }
  });

  it("refuses empty, overlong and unprintable keys, saying why", () => {
    const refused: Array<[string, RegExp]> = [
      ["", /must not be empty/],
      ["k".repeat(SESSION_KEY_MAX + 1), /at most 200 characters/],
      [`api:victim${KEY_END}000000:evil`, /control character \(U\+0000\) at position 10/],
      ["api:a\nb", /control character \(U\+000A\)/],
      ["api:a\tb", /control character \(U\+0009\)/],
      ["api:\u001b[31m", /control character \(U\+001B\)/],
      ["api:a\u007fb", /control character \(U\+007F\)/],
      ["api:a\u0085b", /control character \(U\+0085\)/],
      ["api:a\u2028b", /non-printable character \(U\+2028\)/],
      ["api:\u202eevil", /non-printable character \(U\+202E\)/],
      ["api:a\u200bb", /non-printable character \(U\+200B\)/],
      ["api:\ud800", /non-printable character \(U\+D800\)/],
      ["api:\ue000", /non-printable character \(U\+E000\)/],
    ];
    for (const [key, reason] of refused) {
      const result = sessionKeySchema.safeParse(key);
      expect(result.success, JSON.stringify(key)).toBe(false);
      expect(() => parseSessionKey(key), JSON.stringify(key)).toThrow(reason);
      expect(() => parseSessionKey(key)).toThrow(InvalidSessionKeyError);
    }
  });

  it("parseSessionKey takes exactly the keys the schema takes (its fast path for valid keys agrees with it)", () => {
    // Every length edge and every kind of character the schema refuses or takes, mixed.
    const parts = ["", "a", "é", "🎉", "\u0000", "\n", "\u0085", "\u2028", "\u202e", "\u200b", "\ud800", "\ue000", "k".repeat(SESSION_KEY_MAX - 1), "k".repeat(SESSION_KEY_MAX)];
    for (const a of parts)
      for (const b of parts) {
        const key = a + b;
        const taken = sessionKeySchema.safeParse(key).success;
        if (taken) expect(parseSessionKey(key), JSON.stringify(key)).toBe(key);
        else expect(() => parseSessionKey(key), JSON.stringify(key)).toThrow(InvalidSessionKeyError);
      }
  });

  it("shows a refused key with its unprintable characters escaped", () => {
    let message = "";
    try {
      parseSessionKey("api:x\u0000\u001b[2J");
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toBe('invalid session key "api:x\\u{0}\\u{1b}[2J": it must be printable text, but has a control character (U+0000) at position 5');
    expect([...message].some((ch) => ch.charCodeAt(0) < 0x20)).toBe(false);
  });
});
