/** This realm's own exit state: set when a Worker's process.exit() or a stop request begins. */
export const exitState = { exiting: false };
