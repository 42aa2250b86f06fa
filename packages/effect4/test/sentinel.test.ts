import { sentinelSuite } from "@effect-redlock/effect-suites/sentinel.js"

sentinelSuite()
