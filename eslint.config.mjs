// One lint and format configuration for every package and the tooling around them, as Effect's
// repositories have it: typescript-eslint's recommended rules, and dprint's formatting through
// @effect/eslint-plugin (`npm run lint`, `npm run lint -- --fix` to format).
import * as effectEslint from "@effect/eslint-plugin"
import js from "@eslint/js"
import tseslint from "typescript-eslint"

export default tseslint.config(
  {
    ignores: [
      "**/node_modules/**",
      "**/dist/**",
      ".bench-build/**",
      ".bench-probe/**",
      ".bench-against/**",
      "**/.docs-check/**",
      "packs/**"
    ]
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  ...effectEslint.configs.dprint,
  {
    languageOptions: {
      globals: {
        console: "readonly",
        process: "readonly",
        Buffer: "readonly",
        setTimeout: "readonly",
        clearTimeout: "readonly",
        setInterval: "readonly",
        clearInterval: "readonly",
        setImmediate: "readonly",
        clearImmediate: "readonly",
        queueMicrotask: "readonly",
        URL: "readonly",
        AbortController: "readonly",
        AbortSignal: "readonly",
        performance: "readonly",
        globalThis: "readonly",
        structuredClone: "readonly",
        TextEncoder: "readonly",
        TextDecoder: "readonly"
      }
    },
    rules: {
      // Effect's idioms: `interface X extends Y {}` names a type opaquely; a namespace merges types into a class.
      "@typescript-eslint/no-empty-object-type": "off",
      "@typescript-eslint/no-namespace": "off",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@effect/dprint": ["error", {
        config: {
          indentWidth: 2,
          lineWidth: 120,
          semiColons: "asi",
          quoteStyle: "alwaysDouble",
          trailingCommas: "never",
          operatorPosition: "maintain",
          "arrowFunction.useParentheses": "force",
          // The order of imports and exports is the authors': a sort leaves their comments behind.
          "module.sortImportDeclarations": "maintain",
          "module.sortExportDeclarations": "maintain"
        }
      }]
    }
  }
)
