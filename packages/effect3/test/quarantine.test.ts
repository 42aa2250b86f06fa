import { quarantineSuite } from "@effect-redlock/effect-suites/quarantine.js"

quarantineSuite()
