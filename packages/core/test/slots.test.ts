/**
 * The slots' keys (src/engine/slots.ts): which line of waiters a set of keys
 * names, and the slots prefix a key is read with. A permit's or a reader's
 * rounds through each front end are in the shared Effect suites
 * (packages/fleet/effectSuites/slots.ts).
 */
import { assert, describe, it } from "vitest"
import * as Slots from "../src/engine/slots.js"

describe("slots: the lines of keys", () => {
  const slot = (resource: string, number: number, kind = "permit") => `${resource}\u0000${kind}${number}`

  it("names one line for a resource's slots, in any order, and a lock key's own line", () => {
    assert.deepStrictEqual(Slots.linesOf([slot("jobs", 2), slot("jobs", 10), slot("jobs", 0)]), ["jobs\u0000permit"])
    assert.deepStrictEqual(Slots.linesOf(["jobs", "jobs1", "jobs"]), ["jobs", "jobs1"])
    assert.deepStrictEqual(Slots.linesOf([]), [])
  })

  it("tells apart keys that only start like the first key's slots", () => {
    assert.deepStrictEqual(
      Slots.linesOf([
        slot("doc", 1, "read"),
        slot("doc", 3, "read"),
        slot("doc", 1),
        `${slot("doc", 1, "read")}x`,
        "doc"
      ]),
      ["doc\u0000read", "doc\u0000permit", `${slot("doc", 1, "read")}x`, "doc"]
    )
    assert.deepStrictEqual(Slots.linesOf(["doc", slot("doc", 4, "read")]), ["doc", "doc\u0000read"])
  })
})

describe("slots: a key's slots prefix", () => {
  it("is read as `^(.*\\0[A-Za-z]+)\\d+$` reads it", () => {
    // eslint-disable-next-line no-control-regex -- the separator of a slot key is NUL
    const pattern = /^(.*\u0000[A-Za-z]+)\d+$/s
    const keys = [
      "jobs\u0000permit3",
      "jobs\u0000permit",
      "jobs\u00003",
      "jobs",
      "order:42",
      "a\u0000b\u0000read12",
      "\u0000permit1",
      "permit1",
      "x\u0000per-mit1",
      "x\u0000Ab9",
      "x\u0000Ab9a",
      "line\nbreak\u0000read0",
      "",
      "7",
      "\u0000"
    ]
    for (const key of keys) assert.strictEqual(Slots.slotsPrefixOf(key), pattern.exec(key)?.[1], JSON.stringify(key))
  })
})
