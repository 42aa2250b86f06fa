import { fencingSuite } from "@effect-redlock/effect-suites/fencing.js"

fencingSuite()
