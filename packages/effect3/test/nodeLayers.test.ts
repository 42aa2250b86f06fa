import { nodeLayersSuite } from "@effect-redlock/effect-suites/nodeLayers.js"

nodeLayersSuite()
