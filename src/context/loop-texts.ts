/**
 * What the agent loop says when a model answer is empty or cut off (nanobot's runner and its
 * utils/runtime.py): the texts and the limits, shared by the turn machine and its model call.
 */

/** Empty answers (no text, no tool calls) asked for again with tools, before one request without them. */
export const MAX_EMPTY_ANSWERS = 2;
/** How many times an answer cut off at the token limit (finish_reason "length") is continued. */
export const MAX_LENGTH_CONTINUATIONS = 3;

/** The reply when even the request without tools brings no text. */
export const EMPTY_FINAL_RESPONSE_MESSAGE = "I completed the tool steps but couldn't produce a final answer. Please try again or narrow the task.";

/**
 * Appended (never stored) to one last request without tools once the turn has used its tool
 * iterations (agents.defaults.maxToolIterations): its answer, when usable, is the reply (nanobot's
 * finalization after max iterations); else the fixed text of the turn machine's `max_iterations`.
 */
export const BUDGET_EXHAUSTED_PROMPT =
  "This turn has used up its tool-call budget: no more tools can be called. Answer the user now, from the conversation and the tool results above only. " +
  "Say what was done and what is left, and the best next step if the task is not finished; do not claim it is finished unless the results above show it.";

/** Appended (never stored) to the last request, sent without tools, after repeated empty answers. */
export const FINALIZATION_RETRY_PROMPT = "Please provide your response to the user based on the conversation above.";

const LENGTH_RECOVERY_PROMPT =
  "The previous assistant response was cut off. Continue the same response from its exact endpoint. " +
  "Output only new continuation text in the same language and style. Do not acknowledge this instruction, " +
  "restart the response, repeat its title or any existing text, recap, or apologize.";

const LENGTH_RECOVERY_TAIL_CHARS = 64;

/** The user message that asks for the rest of a cut-off answer, quoting its last characters. */
export function lengthRecoveryPrompt(content: string): string {
  return [
    LENGTH_RECOVERY_PROMPT,
    "",
    "The following tail was already delivered to the user. Treat it as immutable context and do not output it again:",
    "<already_delivered_tail>",
    content.slice(-LENGTH_RECOVERY_TAIL_CHARS),
    "</already_delivered_tail>",
    "Begin with the text that belongs immediately after this tail.",
  ].join("\n");
}

/** Finish reasons whose empty text is not "the model said nothing" (nanobot retries none of them). */
const NOT_AN_EMPTY_ANSWER = new Set(["error", "length", "refusal", "content_filter"]);

/** An answer with no text and no tool calls that a retry may fix. */
export const isEmptyAnswer = (r: { content: string; toolCalls: unknown[]; finishReason: string | null }) =>
  r.toolCalls.length === 0 && !r.content.trim() && !NOT_AN_EMPTY_ANSWER.has(r.finishReason ?? "");
