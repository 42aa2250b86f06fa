import { timeSuite } from "@effect-redlock/effect-suites/time.js"

timeSuite()
