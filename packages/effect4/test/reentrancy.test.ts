import { reentrancySuite } from "@effect-redlock/effect-suites/reentrancy.js"

reentrancySuite()
