/**
 * The room state event that says which uploaded snapshot is a user's current state. One per user
 * room, `state_key` = the user's storage key; Matrix keeps earlier versions in the room timeline.
 */
import { Either, Schema } from "effect"

/** Our namespaced state event type. */
export const SNAPSHOT_EVENT_TYPE = "org.plugboard.snapshot"

/** Version of the snapshot format (gzip of a SQLite file produced by the online backup API). */
export const SNAPSHOT_SCHEMA_VERSION = 1

/** Content of an `org.plugboard.snapshot` state event. */
export const SnapshotPointer = Schema.Struct({
  /** `mxc://` URI of the compressed snapshot. */
  mxc: Schema.String.pipe(Schema.startsWith("mxc://")),
  /** Lowercase hex SHA-256 of the uncompressed SQLite file. */
  sha256: Schema.String.pipe(Schema.pattern(/^[0-9a-f]{64}$/)),
  /** Size in bytes of the uncompressed SQLite file. */
  size: Schema.Int.pipe(Schema.nonNegative()),
  /** Size in bytes of the uploaded (compressed) media. */
  compressedSize: Schema.Int.pipe(Schema.nonNegative()),
  encoding: Schema.Literal("gzip"),
  /** When the snapshot was taken, ms since the epoch. */
  createdAt: Schema.Int,
  schemaVersion: Schema.Literal(SNAPSHOT_SCHEMA_VERSION),
  /** SHA-256 of the snapshot this one replaced, when there was one (lineage, for audits). */
  previousSha256: Schema.optional(Schema.String)
})

/** Decoded content of an `org.plugboard.snapshot` state event. */
export type SnapshotPointer = typeof SnapshotPointer.Type

/** Decodes state event content; `Left` carries a readable reason. */
export const decodePointer = (content: unknown): Either.Either<SnapshotPointer, string> =>
  Schema.decodeUnknownEither(SnapshotPointer)(content).pipe(Either.mapLeft((e) => e.message))
