import type { AbortSource } from "./transport.js";

/**
 * What aborts one attempt: an AbortSignal's face for the transport (aborted, reason, "abort"
 * listeners) without an AbortController's EventTarget, which cost more to make than the rest of
 * the attempt's bookkeeping. It follows the caller's signal while linked.
 */
export class AttemptAbort implements AbortSource {
  aborted = false;
  reason: unknown = undefined;
  private listeners: Array<() => void> | undefined;
  private unlink: (() => void) | undefined;

  constructor(parent: AbortSignal | undefined) {
    if (!parent) return;
    if (parent.aborted) {
      this.abort(parent.reason);
      return;
    }
    const onAbort = () => this.abort(parent.reason);
    parent.addEventListener("abort", onAbort, { once: true });
    this.unlink = () => parent.removeEventListener("abort", onAbort);
  }

  abort(reason: unknown) {
    if (this.aborted) return;
    this.aborted = true;
    // As AbortController.abort() without a reason.
    this.reason = reason === undefined ? new DOMException("This operation was aborted", "AbortError") : reason;
    const listeners = this.listeners;
    this.listeners = undefined;
    if (listeners) for (const listener of listeners) listener();
  }

  addEventListener(_type: "abort", listener: () => void) {
    if (this.aborted) return;
    (this.listeners ??= []).push(listener);
  }

  removeEventListener(_type: "abort", listener: () => void) {
    const i = this.listeners?.indexOf(listener) ?? -1;
    if (i >= 0) this.listeners!.splice(i, 1);
  }

  /** Stops following the caller's signal (the attempt is over). */
  dispose() {
    this.unlink?.();
    this.unlink = undefined;
  }
}
