import { settingsSuite } from "@effect-redlock/effect-suites/settings.js"

settingsSuite()
