import { semaphoreSuite } from "@effect-redlock/effect-suites/semaphore.js"

semaphoreSuite()
