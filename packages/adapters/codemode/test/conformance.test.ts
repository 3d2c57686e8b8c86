// The CodeSandbox port's shared suite, on QuickJS (release build, default options).
import { CodeSandboxConformance } from "@plugboard/testing"
import { QuickJsSandbox } from "../src/index.js"

CodeSandboxConformance.run("quickjs", () => QuickJsSandbox.make())
