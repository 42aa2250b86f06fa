import { readWriteLockSuite } from "@effect-redlock/effect-suites/readWriteLock.js"

readWriteLockSuite()
