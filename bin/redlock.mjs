#!/usr/bin/env node
// The `redlock` command line. The package ships its TypeScript sources (no
// build step yet), so they are loaded through tsx.
import { register } from "tsx/esm/api"

register()
await import("../cli/main.ts")
