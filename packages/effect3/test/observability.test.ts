import { observabilitySuite } from "@effect-redlock/effect-suites/observability.js"

observabilitySuite()
