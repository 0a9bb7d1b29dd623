import type { AnyActorRef, AnyStateMachine } from "xstate";
import type { DreamControl } from "../src/memory/commands.js";
import type { DreamDeps } from "../src/memory/dream.js";

/**
 * Dream for a process: the chat commands' DreamControl, which runs Dream in process until `attach`
 * hands it the daemon's actor (the daemon's supervisor owns Dream), and the Dream machine for that
 * actor. Dream's code (its machine, its phases, the memory's git history) is loaded at its first use:
 * a `troupe agent -m` that never dreams does not load it.
 */
export interface DreamRuntime {
  control: DreamControl;
  /** The Dream machine with its phases supplied: the supervisor's `dream` child. */
  logic(): Promise<AnyStateMachine>;
  attach(ref: () => AnyActorRef | undefined): void;
}

export function createDreamRuntime(deps: DreamDeps): DreamRuntime {
  let loading: Promise<Awaited<ReturnType<typeof loadDream>>> | undefined;
  // A load that failed is tried again at the next use, not remembered.
  const loaded = () =>
    (loading ??= loadDream(deps).catch((err: unknown) => {
      loading = undefined;
      throw err;
    }));
  let actor: (() => AnyActorRef | undefined) | undefined;
  const current = async (): Promise<DreamControl> => {
    const { dream, actors } = await loaded();
    return actor ? actors.actorDreamControl(actor, deps.workspace) : actors.directDreamControl(dream, deps.workspace);
  };
  return {
    control: {
      run: async () => (await current()).run(),
      log: async (sha) => (await current()).log(sha),
      restore: async (sha) => (await current()).restore(sha),
      prompt: async (arg) => (await current()).prompt(arg),
    },
    logic: async () => {
      const { dream, actors } = await loaded();
      return actors.createDreamLogic(dream);
    },
    attach(ref) {
      actor = ref;
    },
  };
}

async function loadDream(deps: DreamDeps) {
  const [{ createDream }, actors] = await Promise.all([import("../src/memory/dream.js"), import("./dream.js")]);
  return { dream: createDream(deps), actors };
}
