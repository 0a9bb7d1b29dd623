import { describe, expect, it } from "vitest";
import { IDLE_KEEP_MESSAGES, idleArchiveCount, isIdle } from "../../src/memory/idle-compact.js";
import type { ChatMessage } from "../../src/providers/messages.js";

const MIN = 60_000;

/** nanobot's _add_turns: user/assistant pairs. */
const turns = (n: number, prefix = "msg"): ChatMessage[] =>
  Array.from({ length: n }, (_, i): ChatMessage[] => [
    { role: "user", content: `${prefix} user ${i}` },
    { role: "assistant", content: `${prefix} assistant ${i}` },
  ]).flat();

/** nanobot's _add_tool_turn: an assistant tool call and its result. */
const toolTurn = (prefix: string, i: number): ChatMessage[] => [
  { role: "assistant", content: "", tool_calls: [{ id: `${prefix}-${i}`, type: "function", function: { name: "read_file", arguments: "{}" } }] },
  { role: "tool", tool_call_id: `${prefix}-${i}`, name: "read_file", content: `result ${i}` },
];

describe("idle compaction (nanobot's AutoCompact)", () => {
  // nanobot: TestIsExpired.
  it("a session is idle at the limit and not just under it; 0 never", () => {
    const now = Date.UTC(2026, 0, 1, 12);
    expect(isIdle(now - 15 * MIN, now, 15)).toBe(true);
    expect(isIdle(now - 15 * MIN + 1_000, now, 15)).toBe(false);
    expect(isIdle(now - 365 * 24 * 60 * MIN, now, 0)).toBe(false);
    // test_custom_now_parameter: 9 minutes of a 10 minute limit, then 10.
    expect(isIdle(now, now + 9 * MIN, 10)).toBe(false);
    expect(isIdle(now, now + 10 * MIN, 10)).toBe(true);
  });

  // nanobot: test_auto_compact_archives_prefix_and_keeps_recent_suffix (6 turns: 4 archived, 8 kept from "msg user 2").
  it("archives all but the last 8 messages", () => {
    const tail = turns(6);
    const n = idleArchiveCount(tail);
    expect(n).toBe(4);
    expect(tail.slice(n)).toHaveLength(IDLE_KEEP_MESSAGES);
    expect(tail[n]!.content).toBe("msg user 2");
  });

  // nanobot: test_already_trimmed_session_skips, test_auto_compact_empty_session.
  it("archives nothing when 8 or fewer messages are left", () => {
    expect(idleArchiveCount(turns(2))).toBe(0);
    expect(idleArchiveCount(turns(4))).toBe(0);
    expect(idleArchiveCount([])).toBe(0);
  });

  // nanobot: test_auto_compact_extends_recent_suffix_to_user_turn.
  it("extends the kept suffix back to the user message that starts its turn, never splitting a tool call from its result", () => {
    const tail: ChatMessage[] = [...turns(2, "old"), { role: "user", content: "record this" }];
    for (let i = 0; i < 8; i++) tail.push(...toolTurn("recent", i));
    tail.push({ role: "assistant", content: "done" });
    const kept = tail.slice(idleArchiveCount(tail));
    expect(kept.length).toBeGreaterThan(IDLE_KEEP_MESSAGES);
    expect(kept[0]!.content).toBe("record this");
    expect(kept.at(-1)!.content).toBe("done");
  });

  it("a suffix with no user message does not start at a tool result whose call is archived", () => {
    const tail: ChatMessage[] = [{ role: "user", content: "go" }];
    for (let i = 0; i < 6; i++) tail.push(...toolTurn("t", i));
    // 13 messages; the last 8 start at a tool result, and the only user message is further back: it is kept.
    expect(idleArchiveCount(tail)).toBe(0);
    const noUser = tail.slice(1);
    const kept = noUser.slice(idleArchiveCount(noUser));
    expect(kept[0]!.role).toBe("assistant");
    expect(kept).toHaveLength(8);
  });

  it("archives nothing when no suffix would be left to keep (the tail ends at a tool result whose call is gone)", () => {
    // An imported session whose malformed assistant line was left out: its last message is an orphan result.
    const tail: ChatMessage[] = [...turns(6), { role: "tool", tool_call_id: "lost", name: "read_file", content: "result" }];
    expect(idleArchiveCount(tail)).toBe(0);
  });
});
