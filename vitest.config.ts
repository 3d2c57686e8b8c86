import { defineConfig } from "vitest/config"

// Workspace packages resolve to their TypeScript sources through the custom export condition;
// it must be set for both the client and the SSR resolver (see TOOLCHAIN.md).
const conditions = ["@plugboard/source"]

export default defineConfig({
  resolve: { conditions },
  ssr: { resolve: { conditions } },
  test: {
    include: [
      "packages/*/test/**/*.test.ts",
      "packages/adapters/*/test/**/*.test.ts",
      // the test `plugboard init` scaffolds (packages/host-node/template), run on the workspace
      "packages/host-node/template/test/**/*.test.ts",
      "examples/**/*.test.ts"
    ],
    // LangGraph's checkpointer conformance suite relies on global beforeAll/describe.
    globals: true,
    setupFiles: ["./vitest.setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 120_000
  }
})
