/**
 * The form of an `input` wait (issue 40, docs/waiting.md): a tool call in flight (an MCP server's
 * elicitation) asks its user a question with a JSON Schema of an object. Each property becomes a
 * field: a string (a select when it has an `enum`), a number or integer, a boolean (a checkbox);
 * `title` labels it, `description` explains it, `required` marks it. Send posts the values; the
 * server checks them against the schema and says why when they do not fit, shown under the form.
 * The inputs are uncontrolled (`default…`): a re-render of the turn keeps what the user typed.
 */
import { useState } from "preact/hooks"

/** One field of the form, as read from the schema's `properties`. */
interface Field {
  readonly name: string
  readonly label: string
  readonly description?: string | undefined
  readonly type: "string" | "number" | "integer" | "boolean"
  readonly options?: ReadonlyArray<string> | undefined
  readonly required: boolean
  readonly initial?: unknown
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v)

/** The fields of a schema (properties of another type are shown as text fields). */
export const fieldsOf = (schema: unknown): ReadonlyArray<Field> => {
  if (!isRecord(schema) || !isRecord(schema.properties)) return []
  const required = Array.isArray(schema.required) ? schema.required : []
  return Object.entries(schema.properties).map(([name, raw]) => {
    const p = isRecord(raw) ? raw : {}
    const t = p.type
    const type = t === "number" || t === "integer" || t === "boolean" ? t : "string"
    return {
      name,
      label: typeof p.title === "string" && p.title !== "" ? p.title : name,
      description: typeof p.description === "string" ? p.description : undefined,
      type,
      options: Array.isArray(p.enum) ? p.enum.map(String) : undefined,
      required: required.includes(name),
      initial: p.default
    }
  })
}

/** The values of the form's inputs: empty optional fields left out, numbers as numbers. */
const valuesOf = (fields: ReadonlyArray<Field>, form: HTMLFormElement): Record<string, unknown> => {
  const values: Record<string, unknown> = {}
  for (const f of fields) {
    const input = form.elements.namedItem(f.name) as HTMLInputElement | HTMLSelectElement | null
    if (input === null) continue
    if (f.type === "boolean") {
      values[f.name] = (input as HTMLInputElement).checked
      continue
    }
    const text = input.value
    if (text === "") {
      if (f.required) values[f.name] = text
      continue
    }
    values[f.name] = f.type === "number" || f.type === "integer" ? Number(text) : text
  }
  return values
}

/** The form of one input wait: Send (the values) and Decline. */
export const InputForm = (props: {
  /** Unique on the page (the wait's id): the fields' ids start with it. */
  readonly id: string
  readonly schema: unknown
  readonly disabled: boolean
  readonly onSend: (values: Record<string, unknown>) => void
  readonly onDecline: () => void
}) => {
  const fields = fieldsOf(props.schema)
  const [form, setForm] = useState<HTMLFormElement | null>(null)
  return (
    <form
      class="input-form"
      ref={setForm}
      onSubmit={(e) => {
        e.preventDefault()
        if (form !== null) props.onSend(valuesOf(fields, form))
      }}
    >
      {fields.map((f) => (
        <p key={f.name}>
          <label htmlFor={`${props.id}-${f.name}`}>
            {f.label}
            {f.required ? " *" : ""}
          </label>{" "}
          {f.type === "boolean" ? (
            <input
              type="checkbox"
              id={`${props.id}-${f.name}`}
              name={f.name}
              defaultChecked={f.initial === true}
            />
          ) : f.options !== undefined ? (
            <select id={`${props.id}-${f.name}`} name={f.name}>
              {f.required ? null : <option value="">—</option>}
              {f.options.map((o) => (
                <option key={o} value={o} selected={f.initial === o}>
                  {o}
                </option>
              ))}
            </select>
          ) : (
            <input
              type={f.type === "string" ? "text" : "number"}
              step={f.type === "integer" ? "1" : "any"}
              id={`${props.id}-${f.name}`}
              name={f.name}
              defaultValue={f.initial === undefined ? "" : String(f.initial)}
            />
          )}
          {f.description === undefined ? null : <span class="muted"> {f.description}</span>}
        </p>
      ))}
      <p>
        <button type="submit" disabled={props.disabled}>
          Send
        </button>{" "}
        <button type="button" disabled={props.disabled} onClick={props.onDecline}>
          Decline
        </button>
      </p>
    </form>
  )
}
