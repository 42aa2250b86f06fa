/**
 * A small seeded generator of numbers in [0, 1): the same seed gives the same
 * sequence, so that a schedule of faults or holds replays exactly. Not for
 * anything secret.
 */
export const seeded = (seed: number) => (): number => {
  seed = (seed * 1103515245 + 12345) % 2147483648
  return seed / 2147483648
}
