import { nodeKindsSuite } from "@effect-redlock/effect-suites/nodeKinds.js"

nodeKindsSuite()
