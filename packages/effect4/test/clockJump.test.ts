import { clockJumpSuite } from "@effect-redlock/effect-suites/clockJump.js"

clockJumpSuite()
