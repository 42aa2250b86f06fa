import { slotsSuite } from "@effect-redlock/effect-suites/slots.js"

slotsSuite()
