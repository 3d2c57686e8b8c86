/** The boot order of plugins: each after everything it `dependsOn` (docs/spec/catalog.md#boot-order). */
import { shown } from "./text.js"

/** What the sort needs of a plugin. */
export interface Node {
  readonly name: string
  readonly dependsOn: ReadonlyArray<string>
}

/**
 * Kahn's algorithm, always taking the ready plugin registered first, so a list that already
 * respects its dependencies comes back unchanged. Missing dependencies and cycles are reported
 * (naming the plugins); the sort then ignores those edges.
 */
export const sortByDependencies = <D extends Node>(
  drafts: ReadonlyArray<D>,
  byName: ReadonlyMap<string, D>,
  errors: string[]
): ReadonlyArray<D> => {
  const position = new Map<D, number>()
  drafts.forEach((d, i) => {
    position.set(d, i)
  })
  const pending = new Array<number>(drafts.length).fill(0)
  const dependents: number[][] = drafts.map(() => [])
  const deps: number[][] = drafts.map(() => [])
  drafts.forEach((d, i) => {
    for (const depName of d.dependsOn) {
      const dep = byName.get(depName)
      if (dep === undefined) {
        errors.push(`Plugin '${shown(d.name)}' depends on '${shown(depName)}', which is not registered.`)
        continue
      }
      const j = position.get(dep) as number
      deps[i]?.push(j)
      dependents[j]?.push(i)
      pending[i] = (pending[i] as number) + 1
    }
  })

  const heap = new MinHeap()
  pending.forEach((n, i) => {
    if (n === 0) heap.push(i)
  })
  const out: D[] = []
  while (heap.size > 0) {
    const i = heap.pop()
    out.push(drafts[i] as D)
    for (const k of dependents[i] as number[]) {
      pending[k] = (pending[k] as number) - 1
      if (pending[k] === 0) heap.push(k)
    }
  }
  if (out.length < drafts.length) reportCycles(drafts, deps, pending, errors)
  return out
}

/**
 * Every plugin left unsorted waits on another unsorted one, so following "first unsorted
 * dependency" from any of them must revisit a plugin: that loop is a cycle. Each walk stops at
 * plugins an earlier walk visited, so each cycle is reported once.
 */
const reportCycles = (
  drafts: ReadonlyArray<Node>,
  deps: ReadonlyArray<ReadonlyArray<number>>,
  pending: ReadonlyArray<number>,
  errors: string[]
): void => {
  const visited = new Set<number>()
  for (let start = 0; start < drafts.length; start++) {
    if ((pending[start] as number) === 0 || visited.has(start)) continue
    const path: number[] = []
    const onPath = new Map<number, number>()
    let node: number | undefined = start
    while (node !== undefined && !visited.has(node)) {
      visited.add(node)
      onPath.set(node, path.length)
      path.push(node)
      node = (deps[node] as ReadonlyArray<number>).find((j) => (pending[j] as number) > 0)
    }
    if (node === undefined || !onPath.has(node)) continue
    const cycle = path.slice(onPath.get(node))
    // Start the loop at its earliest-registered plugin so the message is deterministic.
    const first = cycle.indexOf(Math.min(...cycle))
    const loop = [...cycle.slice(first), ...cycle.slice(0, first)]
    const names = loop.map((i) => `'${shown((drafts[i] as Node).name)}'`)
    errors.push(`Plugin ${names[0]} is in a dependency cycle: ${[...names, names[0]].join(" -> ")}.`)
  }
}

/** A binary min-heap of registration indexes. */
class MinHeap {
  private readonly items: number[] = []
  get size(): number {
    return this.items.length
  }
  push(value: number): void {
    const a = this.items
    a.push(value)
    let i = a.length - 1
    while (i > 0) {
      const parent = (i - 1) >> 1
      if ((a[parent] as number) <= value) break
      a[i] = a[parent] as number
      i = parent
    }
    a[i] = value
  }
  pop(): number {
    const a = this.items
    const top = a[0] as number
    const last = a.pop() as number
    if (a.length > 0) {
      let i = 0
      for (;;) {
        const l = 2 * i + 1
        if (l >= a.length) break
        const r = l + 1
        const c = r < a.length && (a[r] as number) < (a[l] as number) ? r : l
        if ((a[c] as number) >= last) break
        a[i] = a[c] as number
        i = c
      }
      a[i] = last
    }
    return top
  }
}
