import { redisSuite } from "@effect-redlock/effect-suites/redis.js"

redisSuite()
