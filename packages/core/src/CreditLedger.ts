/**
 * The `CreditLedger` port: per-user credit balances and their history (issue 8, "Credits").
 *
 * Amounts are whole credits (positive safe integers). A balance is never negative.
 *
 * `deduct` takes what is there and reports the shortfall instead of failing: the credits
 * middleware charges *after* a model call, for usage that already happened, so refusing the
 * charge would record nothing and let the turn go free. Clamping records what could be taken,
 * leaves the balance at zero (the next request then gets 402 from the credit gate) and tells the
 * caller how much went unpaid. Invariant, under any interleaving of concurrent calls:
 * `balance = Σ topUp amounts − Σ charged`, `charged = min(requested, balance before)`.
 *
 * Reservations (concurrent turns can never take the balance below zero). A
 * turn reserves an estimate before it runs; `reserve` succeeds only while the balance minus the
 * user's live reservations (`available`) covers it, checked and recorded in one atomic step, so
 * concurrent reserves can never promise more than the balance holds. At its end the turn
 * `settle`s the actual cost and the rest of the hold is released. A reservation lives `ttlMs`
 * (measured on the `Clock` port) and then stops counting, so a process that dies mid-turn cannot
 * hold credits forever; settling or releasing an expired one fails `unknown-reservation`, as does
 * a second settle or release. Invariant, under any interleaving: `balance ≥ 0` and
 * `available = balance − Σ live reservations ≥ 0`. Hence a `deduct` takes only from `available`
 * (credits promised to a running turn are not there to take), and a settle whose actual cost
 * exceeds its reservation takes the excess from `available` too: it charges
 * `min(actual, reserved + available)` and reports the rest as shortfall, never going below zero
 * and never taking another turn's reservation.
 *
 * Every method names the user explicitly and may fail: implementations may keep balances in a
 * file, a shared database or another process.
 */
export * from "./internal/creditLedger/memory.js"
export * from "./internal/creditLedger/port.js"
