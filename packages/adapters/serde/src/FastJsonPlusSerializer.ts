/**
 * LangGraph's stock `JsonPlusSerializer`, reading and writing its "json" format through
 * `FastJson.ts`: the same bytes out and the same values back, without the stock reader's promise
 * turn per property. A checkpointer that only takes a serde (LangGraph's `PostgresSaver`) gets the
 * fast path from this class; every other type goes to the stock serializer.
 */
import { JsonPlusSerializer } from "@langchain/langgraph-checkpoint"
import { dumpJsonPlus, loadJsonPlus } from "./FastJson.js"

/** `JsonPlusSerializer` with the fast "json" reader and writer (same format, same results). */
export class FastJsonPlusSerializer extends JsonPlusSerializer {
  private readonly stock = new JsonPlusSerializer()

  override async loadsTyped(type: string, data: Uint8Array | string): Promise<unknown> {
    return type === "json" ? loadJsonPlus(data) : super.loadsTyped(type, data)
  }

  override async dumpsTyped(value: unknown): Promise<[string, Uint8Array]> {
    // The stock serializer is the fallback for what JSON.stringify refuses (a cycle, a BigInt).
    return dumpJsonPlus(this.stock, value)
  }
}
