// node-redlock 5.0.0-beta.2 ships types its package.json "exports" do not point to.
declare module "redlock" {
  const Redlock: new(clients: Iterable<unknown>, settings?: object) => unknown
  export default Redlock
}
