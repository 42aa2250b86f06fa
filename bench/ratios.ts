/**
 * The tables' figures: the median of a contender's rounds, and a ratio of
 * two contenders as the median of the ratios of their rounds (the order of
 * contenders alternates between rounds, so each round's pair ran on the
 * machine as it was then), with the rounds' spread.
 */
export const median = (values: ReadonlyArray<number>): number => {
  const finite = values.filter(Number.isFinite).sort((a, b) => a - b)
  if (finite.length === 0) return NaN
  const middle = Math.floor(finite.length / 2)
  return finite.length % 2 === 1 ? finite[middle] : (finite[middle - 1] + finite[middle]) / 2
}

/** `ours` ÷ `theirs`, round by round: "1.02x (0.97–1.06)"; one round: "1.02x"; "–" when there is none. */
export const ratioCell = (ours: ReadonlyArray<number>, theirs: ReadonlyArray<number>): string => {
  const ratios = ours.flatMap((value, round) => {
    const other = theirs[round]
    return Number.isFinite(value) && Number.isFinite(other) && other !== 0 ? [value / other] : []
  })
  if (ratios.length === 0) return "–"
  const cell = `${median(ratios).toFixed(2)}x`
  return ratios.length === 1 ? cell : `${cell} (${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})`
}
