/**
 * The bridge between a program and the host: what the program sees (`tools`, `console`) and the
 * few VM functions the host drives it with. It is installed by a bootstrap script that runs in
 * the fresh context before the program, while every builtin is still the engine's own: it keeps
 * its own references to `JSON.stringify`, `JSON.parse`, `Promise.reject` and the error
 * constructors, so a program that redefines them afterwards changes its own world only, never what
 * the bridge sends the host or how the host reads the program's result.
 *
 * The two host functions the bridge calls (`hostCall`, `hostLog`) are handed to the bootstrap as
 * arguments and live only in its closure, never on the global object. They take strings only, and
 * the host checks every argument again: even a program that got hold of them could do no more than
 * `tools` lets it.
 */
import type { CodeSandbox } from "@plugboard/core"
import type { QuickJSContext, QuickJSHandle } from "quickjs-emscripten"

// Runs once per context, before the program. Strict, and written against the engine's pristine
// builtins only (captured at the top).
const BOOTSTRAP = `(function (hostCall, hostLog, specJson) {
  "use strict";
  const stringify = JSON.stringify;
  const parse = JSON.parse;
  const freeze = Object.freeze;
  const create = Object.create;
  const defineProperty = Object.defineProperty;
  const PromiseCtor = Promise;
  const reject = Promise.reject.bind(Promise);
  const toText = String;
  const TypeErrorCtor = TypeError;
  const AsyncFunction = (async function () {}).constructor;
  const slice = Function.prototype.call.bind(String.prototype.slice);
  const join = Function.prototype.call.bind(Array.prototype.join);

  const messageOf = (error) => {
    try {
      if (error !== null && typeof error === "object" && "message" in error) return toText(error.message);
      return toText(error);
    } catch (_) {
      return "an error that could not be read";
    }
  };

  // A log entry: strings as they are, anything else as JSON (its string form when it has none).
  const text = (value) => {
    if (typeof value === "string") return value;
    try {
      const json = stringify(value);
      if (json !== undefined) return json;
    } catch (_) {}
    try {
      return toText(value);
    } catch (_) {
      return "[unprintable]";
    }
  };

  const makeTool = (namespace, name) => {
    const label = "tools." + namespace + "." + name;
    const tool = function (args) {
      let json = undefined;
      if (args !== undefined) {
        try {
          json = stringify(args);
        } catch (error) {
          return reject(new TypeErrorCtor(label + ": its arguments are not JSON (" + messageOf(error) + ")"));
        }
        if (json === undefined)
          return reject(new TypeErrorCtor(label + ": its arguments are not JSON (a " + typeof args + ")"));
      }
      return new PromiseCtor((resolve, fail) => hostCall(namespace, name, json, resolve, fail));
    };
    defineProperty(tool, "name", { value: name });
    return freeze(tool);
  };

  // Null prototypes: tools.<namespace>.<anything unlisted> is undefined, even "toString".
  const tools = create(null);
  for (const [namespace, names] of parse(specJson)) {
    const functions = create(null);
    for (const name of names) defineProperty(functions, name, { value: makeTool(namespace, name), enumerable: true });
    defineProperty(tools, namespace, { value: freeze(functions), enumerable: true });
  }
  freeze(tools);

  const log = function (...values) {
    const parts = [];
    for (let i = 0; i < values.length; i++) parts[i] = text(values[i]);
    hostLog(join(parts, " "));
  };
  const console = freeze({ log, info: log, warn: log, error: log });

  defineProperty(globalThis, "tools", { value: tools, enumerable: false, writable: false, configurable: false });
  defineProperty(globalThis, "console", { value: console, enumerable: false, writable: false, configurable: false });

  return freeze({
    compile: (body) => AsyncFunction(body),
    // The result as JSON; undefined stays undefined; a value JSON cannot write is refused.
    encode: (value) => {
      if (value === undefined) return undefined;
      const json = stringify(value);
      if (json === undefined) throw new TypeErrorCtor("its result is not JSON (a " + typeof value + ")");
      return json;
    },
    parse: (json) => parse(json),
    // What a thrown value says: "Name: message" for an error, its text otherwise; capped by the host.
    describe: (error, max) => {
      let out;
      try {
        if (error !== null && typeof error === "object" && "message" in error) {
          const name = "name" in error ? toText(error.name) : "Error";
          out = name + ": " + toText(error.message);
        } else out = text(error);
      } catch (_) {
        out = "a thrown value that could not be read";
      }
      return out.length > max ? slice(out, 0, max) + "…" : out;
    },
    // Where QuickJS reports a syntax error: the line of <input> (the function constructor's source).
    lineOf: (error) => {
      try {
        const stack = toText(error.stack);
        const at = stack.indexOf("<input>:");
        return at < 0 ? -1 : parseInt(slice(stack, at + 8), 10);
      } catch (_) {
        return -1;
      }
    }
  });
})`

/** The lines the function constructor puts before the body (`(async function anonymous(`, `) {`). */
export const BODY_LINE_OFFSET = 2

/** The host's side of `tools.x.y(args)` and `console.log`: called synchronously from the VM. */
export interface HostSide {
  /**
   * A tool call: its arguments already decoded from JSON, and the resolving functions of the VM
   * promise the program awaits (borrowed for the call: `dup` them to keep them).
   */
  readonly call: (
    tool: CodeSandbox.ToolRef,
    args: unknown,
    resolve: QuickJSHandle,
    reject: QuickJSHandle
  ) => void
  /** One log entry. */
  readonly log: (entry: string) => void
}

/** The VM functions the host drives a program with; handles owned by the caller until `dispose`. */
export interface Bridge {
  readonly compile: QuickJSHandle
  readonly encode: QuickJSHandle
  readonly parse: QuickJSHandle
  readonly describe: QuickJSHandle
  readonly lineOf: QuickJSHandle
  readonly dispose: () => void
}

const toolKey = (namespace: string, name: string): string => JSON.stringify([namespace, name])

/**
 * Installs `tools` (exactly `tools`, each namespace and function frozen) and `console` in `context`,
 * and returns the bridge. Throws when the bootstrap fails (it only can by running out of memory).
 */
export const install = (
  context: QuickJSContext,
  tools: ReadonlyArray<CodeSandbox.ToolRef>,
  host: HostSide
): Bridge => {
  const byKey = new Map<string, CodeSandbox.ToolRef>()
  const namespaces = new Map<string, Array<string>>()
  for (const tool of tools) {
    const key = toolKey(tool.namespace, tool.name)
    if (byKey.has(key)) continue
    byKey.set(key, tool)
    const names = namespaces.get(tool.namespace) ?? []
    names.push(tool.name)
    namespaces.set(tool.namespace, names)
  }

  const hostCall = context.newFunction("hostCall", (namespaceH, nameH, jsonH, resolveH, rejectH) => {
    // Checked again here: nothing but the bridge's own tool functions is meant to call this.
    const namespace = context.typeof(namespaceH) === "string" ? context.getString(namespaceH) : undefined
    const name = context.typeof(nameH) === "string" ? context.getString(nameH) : undefined
    const tool =
      namespace !== undefined && name !== undefined ? byKey.get(toolKey(namespace, name)) : undefined
    if (tool === undefined) throw new TypeError("no such tool")
    const kind = context.typeof(jsonH)
    if (kind !== "undefined" && kind !== "string") throw new TypeError("tool arguments must be JSON")
    if (resolveH === undefined || rejectH === undefined || context.typeof(resolveH) !== "function")
      throw new TypeError("no promise to settle")
    const args: unknown = kind === "string" ? JSON.parse(context.getString(jsonH)) : undefined
    host.call(tool, args, resolveH, rejectH)
  })
  const hostLog = context.newFunction("hostLog", (entryH) => {
    if (context.typeof(entryH) !== "string") throw new TypeError("a log entry must be a string")
    host.log(context.getString(entryH))
  })
  const spec = context.newString(JSON.stringify([...namespaces]))
  const handles: Array<QuickJSHandle> = []
  try {
    const factory = context.unwrapResult(context.evalCode(BOOTSTRAP, "bridge.js", { type: "global" }))
    handles.push(factory)
    const api = context.unwrapResult(
      context.callFunction(factory, context.undefined, hostCall, hostLog, spec)
    )
    handles.push(api)
    const member = (key: string): QuickJSHandle => {
      const h = context.getProp(api, key)
      handles.push(h)
      return h
    }
    return {
      compile: member("compile"),
      encode: member("encode"),
      parse: member("parse"),
      describe: member("describe"),
      lineOf: member("lineOf"),
      dispose: () => {
        for (const h of handles.splice(0)) if (h.alive) h.dispose()
      }
    }
  } catch (error) {
    for (const h of handles) if (h.alive) h.dispose()
    throw error
  } finally {
    // The closure holds its own references; the host's copies are no longer needed.
    hostCall.dispose()
    hostLog.dispose()
    spec.dispose()
  }
}
