/**
 * `@plugboard/codemode` — code mode's sandbox: core's `CodeSandbox` port on QuickJS compiled to
 * WebAssembly, where a program the model wrote reaches only the tools it is handed, within the
 * bounds core gives it (docs/code-mode.md).
 */
export * as QuickJsSandbox from "./QuickJsSandbox.js"
