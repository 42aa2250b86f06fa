import * as Contenders from "./contenders.js"
import * as Scenarios from "./scenarios.js"
const ports = [7201, 7202, 7203, 7204, 7205]
const name = process.argv[2] ?? "effect-redlock"
const contender = Contenders.all.find((c) => c.name.startsWith(name))!
const client = await contender.start(ports, "none")
await Scenarios.throughput(client, 1, 1, "warm")
console.log(JSON.stringify(await Scenarios.throughput(client, 1, 4, "measured")))
await client.close()
process.exit(0)
