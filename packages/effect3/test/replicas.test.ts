import { replicasSuite } from "@effect-redlock/effect-suites/replicas.js"

replicasSuite()
