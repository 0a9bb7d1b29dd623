import { describe, expect, it } from "vitest";
import { admit, isAllowed, readAllowFrom } from "../../src/channels/telegram-update.js";
import { BOT, telegramFuzzCase } from "../fixtures/fake-telegram.js";

describe("allowFrom", () => {
  const alice = { id: 42, username: "Alice" };
  it("accepts ids, usernames with or without @ in any ASCII case, id|username pairs, and *", () => {
    expect(isAllowed(alice, ["42"])).toBe(true);
    expect(isAllowed(alice, ["@alice"])).toBe(true);
    expect(isAllowed(alice, [" ALICE "])).toBe(true);
    expect(isAllowed(alice, ["42|alice"])).toBe(true);
    expect(isAllowed(alice, ["42|somebody_else"])).toBe(true);
    expect(isAllowed(alice, ["*"])).toBe(true);
    expect(isAllowed(alice, ["43", "bob"])).toBe(false);
    expect(isAllowed({ id: 5 }, ["alice"])).toBe(false);
    expect(isAllowed(alice, [])).toBe(false);
  });

  it("a pair grants its id, not its username: usernames change hands", () => {
    expect(isAllowed({ id: 8, username: "alice" }, ["42|alice"])).toBe(false);
    expect(isAllowed({ id: 8, username: "alice" }, ["|alice"])).toBe(false);
  });

  it("a username is never read as an id", () => {
    expect(isAllowed({ id: 8, username: "42" }, ["42"])).toBe(false);
    expect(isAllowed({ id: 8, username: "42" }, ["42|alice"])).toBe(false);
  });

  it("an empty username matches no entry, junk entries grant no one", () => {
    for (const junk of ["", "@", "|", "|@", " ", "@@"]) {
      expect(isAllowed({ id: 8, username: "" }, [junk]), JSON.stringify(junk)).toBe(false);
      expect(isAllowed({ id: 8 }, [junk]), JSON.stringify(junk)).toBe(false);
    }
  });

  it("only ASCII case is folded: a username that merely lowercases to a granted one does not match", () => {
    expect(isAllowed({ id: 8, username: "\u212Aate" }, ["kate"])).toBe(false);
    expect(isAllowed({ id: 8, username: "KATE" }, ["@kate"])).toBe(true);
  });
});

describe("admitting updates", () => {
  const opts = { allowFrom: readAllowFrom(["alice", "7"]), groupPolicy: "mention" as const, bot: { id: BOT.id, username: BOT.username } };
  const alice = { id: 42, is_bot: false, first_name: "a", username: "alice" };
  const message = (body: Record<string, unknown>) => ({ update_id: 5, message: { message_id: 1, date: 0, chat: { id: 42, type: "private" }, from: alice, text: "hi", ...body } });

  it("takes a well-formed message from an allowed sender, with its sender as id|username", () => {
    expect(admit(message({}), opts)).toMatchObject({ ok: true, updateId: 5, senderId: "42|alice", message: { text: "hi", chat: { id: 42 } } });
  });

  it.each([
    ["no update_id", { message: message({}).message }, "malformed", undefined],
    ["an update that is not an object", "junk", "malformed", undefined],
    ["no chat", message({ chat: undefined }), "malformed", 5],
    ["chat null", message({ chat: null }), "malformed", 5],
    ["a string chat id", message({ chat: { id: "42", type: "private" } }), "malformed", 5],
    ["a numeric username", message({ from: { ...alice, username: 42 } }), "malformed", 5],
    ["an object username", message({ from: { ...alice, username: { name: "alice" } } }), "malformed", 5],
    ["a string id", message({ from: { ...alice, id: "42" } }), "malformed", 5],
    ["from null", message({ from: null }), "malformed", 5],
    ["neither from nor sender_chat", message({ from: undefined }), "malformed", 5],
    ["a text that is a number", message({ text: 42 }), "malformed", 5],
    ["message null", { update_id: 5, message: null }, "malformed", 5],
    ["no text nor known media", message({ text: undefined, sticker: { file_id: "s" } }), "nothing to read", 5],
    ["an empty text", message({ text: "  " }), "nothing to read", 5],
    ["an edited_message", { update_id: 5, edited_message: message({}).message }, "not a message", 5],
    ["a channel_post", { update_id: 5, channel_post: message({}).message }, "not a message", 5],
    ["a callback_query", { update_id: 5, callback_query: { id: "q", from: alice, data: "d" } }, "not a message", 5],
    ["a message posted as a channel", message({ from: undefined, sender_chat: { id: -100, type: "channel", username: "alice" } }), "posted as a chat", 5],
    ["an allowed user posting as a chat", message({ sender_chat: { id: -100, type: "supergroup" } }), "posted as a chat", 5],
    ["a sender outside allowFrom", message({ from: { ...alice, id: 8, username: "mallory" } }), "sender not allowed", 5],
    ["an unaddressed group message", message({ chat: { id: -5, type: "group" } }), "not addressed", 5],
  ])("drops %s", (_, update, why, updateId) => {
    const got = admit(update, opts);
    expect(got).toMatchObject({ ok: false, why });
    expect(got.updateId).toBe(updateId);
  });

  it("in groups takes a message that mentions the bot (without the mention) or replies to it", () => {
    const group = { chat: { id: -5, type: "supergroup" } };
    expect(admit(message({ ...group, text: "@Troupe_Bot hello" }), opts)).toMatchObject({ ok: true, text: "hello" });
    expect(admit(message({ ...group, reply_to_message: { message_id: 3, from: { id: BOT.id } } }), opts)).toMatchObject({ ok: true });
    expect(admit(message({ ...group, reply_to_message: { message_id: 3 } }), opts)).toMatchObject({ ok: false, why: "not addressed" });
    expect(admit(message({ ...group, reply_to_message: { message_id: 3 } }), { ...opts, bot: undefined })).toMatchObject({ ok: false, why: "not addressed" });
  });

  it("under * takes a message posted as a chat, with the chat as its sender", () => {
    const update = message({ from: undefined, chat: { id: -5, type: "supergroup" }, sender_chat: { id: -100, type: "channel", username: "news" }, text: "@troupe_bot hi" });
    expect(admit(update, { ...opts, allowFrom: readAllowFrom(["*"]) })).toMatchObject({ ok: true, senderId: "-100|news" });
  });

  it("reports allowFrom entries that name no one", () => {
    expect(readAllowFrom(["42", "@alice", "42|alice", "7|", "*", "", "@", "|", "|alice", "alice|42", "a b", "4|2|1"]).unusable).toEqual(["", "@", "|", "|alice", "alice|42", "a b", "4|2|1"]);
  });

  it("fuzz (seeded, 300 cases of 40 updates): answers exactly the well-formed, addressed messages of granted senders", () => {
    let answered = 0;
    const wrong: string[] = [];
    for (let seed = 1; seed <= 300; seed++) {
      const { allowFrom, updates } = telegramFuzzCase(seed, 40);
      const list = readAllowFrom(allowFrom);
      for (const [i, u] of updates.entries()) {
        const got = admit({ ...u.body, update_id: i }, { allowFrom: list, groupPolicy: "mention", bot: { id: BOT.id, username: BOT.username } });
        if (got.ok !== u.answer) wrong.push(`seed ${seed}, allowFrom ${JSON.stringify(allowFrom)}: ${u.shape} from ${u.sender} ${got.ok ? "answered" : "dropped"}`);
        if (got.ok) answered++;
      }
    }
    expect(wrong).toEqual([]);
    // Both outcomes were exercised: the oracle is not vacuous.
    expect(answered).toBeGreaterThan(0.05 * 300 * 40);
    expect(answered).toBeLessThan(0.95 * 300 * 40);
  });
});
