import { memorySuite } from "@effect-redlock/effect-suites/memory.js"

memorySuite()
