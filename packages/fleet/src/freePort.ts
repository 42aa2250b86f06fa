/** Free ports of 127.0.0.1 for the fleet's servers. */
import * as Net from "node:net"

/** A port of 127.0.0.1 that was free a moment ago. */
const portFreeNow = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = Net.createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })

// Ports handed to a server of this process. Servers started together could
// otherwise be handed one port (the kernel gives a closed port out again), one
// as its port and another as its cluster bus port: the second exits at once.
const handedOut = new Set<number>()

/** A free port no server of this process was given before (checked and taken in one step). */
export const freePort = async (): Promise<number> => {
  for (;;) {
    const port = await portFreeNow()
    if (!handedOut.has(port)) {
      handedOut.add(port)
      return port
    }
  }
}
