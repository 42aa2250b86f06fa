import { promiseHostSuite } from "@effect-redlock/effect-suites/promiseHost.js"

promiseHostSuite()
