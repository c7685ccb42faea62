"""Storage plumbing shared by the features that keep state (memory's session log, the pending
stores and nonce ledgers), so each mechanism is written once and neither feature borrows from the
other: SQL flows and table prefixes (:mod:`.sql`), one SQLite connection manager with its
background checkpoints (:mod:`.sqlite`, :mod:`.checkpoint`), the PostgreSQL pool and schema lock
(:mod:`.postgres`), Redis clients (:mod:`.redis`) and blocking calls off the loop
(:mod:`.threads`).

Nothing here imports a feature, and no driver is imported until a store that needs it is made.
"""
