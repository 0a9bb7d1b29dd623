/** How a turn can end (the turn machine's final states), apart from the machine so a client can name them without loading XState. */
export const TURN_FINAL_STATES = ["responded", "failed", "cancelled", "max_iterations"] as const;
