import { memoryNodesSuite } from "@effect-redlock/effect-suites/memoryNodes.js"

memoryNodesSuite()
