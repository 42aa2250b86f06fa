/** The shared behaviours (the test fleet's behaviours.ts) for the promise API as core ships it. */
import { afterAll, beforeAll, beforeEach, describe, it } from "vitest"
import { behaviours } from "@effect-redlock/fleet/behaviours.js"
import { promiseApi } from "./promiseFrontEnd.js"

behaviours(promiseApi, { afterAll, beforeAll, beforeEach, describe, it })
