import { waitingSuite } from "@effect-redlock/effect-suites/waiting.js"

waitingSuite()
