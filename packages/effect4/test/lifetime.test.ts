import { lifetimeSuite } from "@effect-redlock/effect-suites/lifetime.js"

lifetimeSuite()
