/**
 * Arrays made on the hot path without an allocation site. V8 may allocate
 * every object of a literal's site in the old generation once many of them
 * outlived a young-generation collection, which then keeps younger objects
 * alive (see attempt.ts, AttemptFields); arrays copied by a builtin
 * (`slice`) have no site. `Array.of()` has none either, but sets the new
 * array's length through the runtime (~4× the time of `slice`, in every
 * permit's instruction count).
 *
 * @internal
 */

// Empty, and of the elements kind that holds anything (a `[]` holds small integers only, and its
// copies then change kind on their first object: ~1.5× the time of a push).
const none: ReadonlyArray<never> = [null as never].slice(1)

/** A new empty array. */
export const empty = <A>(): Array<A> => none.slice()

/** A new array of `length` undefined values. */
export const unset = <A>(length: number): Array<A | undefined> => {
  const array: Array<A | undefined> = none.slice()
  for (let index = 0; index < length; index++) array.push(undefined)
  return array
}
