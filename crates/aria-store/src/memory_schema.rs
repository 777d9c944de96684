//! The tables of long-term memory (schema step 4).
//!
//! - `memories`: one row per memory. `rid` (the rowid) joins the full-text index and the
//!   embeddings; `id` is the public identifier (a UUIDv7, or the id given to `import`).
//! - `memories_fts`: an FTS5 external-content index over `content`, kept in sync by triggers.
//!   A memory whose status is `deleted` is taken *out* of the index, so forgotten content can
//!   never be matched by a text search, whatever filter a caller passes.
//! - `memory_embeddings`: one vector per (memory, embedding model, passage), f32 little-endian
//!   (step 15 added the passage: a long text has one vector per passage). Vectors of
//!   two models are never compared: a search names its model. Step 5 ([`ROWID_EMBEDDINGS`])
//!   made it a rowid table: as a `WITHOUT ROWID` table (step 4) each 1.5 KB vector spilled to
//!   an overflow page of its own, and loading 100,000 of them took seconds; in a rowid table
//!   two rows share a page and a load reads the pages in order.
//! - `memory_state`: a generation counter bumped by triggers on every change that affects the
//!   vector index (a vector added or removed, a status, kind or categories change), so a process
//!   holding an in-memory copy of the vectors can tell that another process changed them.

pub(crate) const STATEMENTS: &[&str] = &[
    "CREATE TABLE memories (
        rid INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        content TEXT NOT NULL,
        normalized TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('fact', 'preference', 'event', 'skill', 'document')),
        categories TEXT NOT NULL DEFAULT '[]',
        importance REAL NOT NULL CHECK (importance >= 0 AND importance <= 1),
        confidence REAL NOT NULL CHECK (confidence >= 0 AND confidence <= 1),
        status TEXT NOT NULL CHECK (status IN ('active', 'archived', 'deleted')),
        verified INTEGER NOT NULL DEFAULT 0 CHECK (verified IN (0, 1)),
        access_count INTEGER NOT NULL DEFAULT 0,
        accessed_at TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        source_conversation_id TEXT,
        source_message_ids TEXT NOT NULL DEFAULT '[]',
        extracted_at TEXT,
        extracted_by TEXT
    ) STRICT",
    "CREATE INDEX memories_status_updated ON memories(status, updated_at)",
    "CREATE INDEX memories_normalized ON memories(normalized)",
    "CREATE VIRTUAL TABLE memories_fts USING fts5(
        content, content='memories', content_rowid='rid',
        tokenize='porter unicode61 remove_diacritics 2'
    )",
    "CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories WHEN NEW.status <> 'deleted'
     BEGIN
        INSERT INTO memories_fts(rowid, content) VALUES (NEW.rid, NEW.content);
     END",
    // One trigger, two statements in order: SQLite gives no documented order between two
    // triggers on the same event, and the old text must leave the index before the new enters.
    "CREATE TRIGGER memories_fts_update AFTER UPDATE OF content, status ON memories
     BEGIN
        INSERT INTO memories_fts(memories_fts, rowid, content)
            SELECT 'delete', OLD.rid, OLD.content WHERE OLD.status <> 'deleted';
        INSERT INTO memories_fts(rowid, content)
            SELECT NEW.rid, NEW.content WHERE NEW.status <> 'deleted';
     END",
    "CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories WHEN OLD.status <> 'deleted'
     BEGIN
        INSERT INTO memories_fts(memories_fts, rowid, content) VALUES ('delete', OLD.rid, OLD.content);
     END",
    "CREATE TABLE memory_embeddings (
        rid INTEGER NOT NULL REFERENCES memories(rid) ON DELETE CASCADE,
        model TEXT NOT NULL,
        dims INTEGER NOT NULL CHECK (dims > 0),
        vector BLOB NOT NULL CHECK (length(vector) = 4 * dims),
        created_at TEXT NOT NULL,
        PRIMARY KEY (rid, model)
    ) STRICT, WITHOUT ROWID",
    "CREATE INDEX memory_embeddings_model ON memory_embeddings(model, rid)",
    "CREATE TABLE memory_state (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        generation INTEGER NOT NULL
    ) STRICT",
    "INSERT INTO memory_state (id, generation) VALUES (1, 0)",
    EMBEDDINGS_BUMP_INSERT,
    EMBEDDINGS_BUMP_UPDATE,
    EMBEDDINGS_BUMP_DELETE,
    "CREATE TRIGGER memories_bump_update AFTER UPDATE OF status, kind, categories ON memories
     BEGIN UPDATE memory_state SET generation = generation + 1 WHERE id = 1; END",
    "CREATE TRIGGER memories_bump_delete AFTER DELETE ON memories
     BEGIN UPDATE memory_state SET generation = generation + 1 WHERE id = 1; END",
];

// The generation bumps of `memory_embeddings`, shared by steps 4 and 5 (dropping the table in
// step 5 drops its triggers, so they are created again, with the same text).
const EMBEDDINGS_BUMP_INSERT: &str =
    "CREATE TRIGGER memory_embeddings_bump_insert AFTER INSERT ON memory_embeddings
     BEGIN UPDATE memory_state SET generation = generation + 1 WHERE id = 1; END";
const EMBEDDINGS_BUMP_UPDATE: &str =
    "CREATE TRIGGER memory_embeddings_bump_update AFTER UPDATE ON memory_embeddings
     BEGIN UPDATE memory_state SET generation = generation + 1 WHERE id = 1; END";
const EMBEDDINGS_BUMP_DELETE: &str =
    "CREATE TRIGGER memory_embeddings_bump_delete AFTER DELETE ON memory_embeddings
     BEGIN UPDATE memory_state SET generation = generation + 1 WHERE id = 1; END";

/// Schema step 5: `memory_embeddings` as a rowid table (same columns and constraints, the key
/// `(rid, model)` now a `UNIQUE` constraint), rows copied over in key order. The generation
/// moves on, so a process holding vectors loaded before reloads them.
pub(crate) const ROWID_EMBEDDINGS: &[&str] = &[
    "CREATE TABLE memory_embeddings_v5 (
        rid INTEGER NOT NULL REFERENCES memories(rid) ON DELETE CASCADE,
        model TEXT NOT NULL,
        dims INTEGER NOT NULL CHECK (dims > 0),
        vector BLOB NOT NULL CHECK (length(vector) = 4 * dims),
        created_at TEXT NOT NULL,
        UNIQUE (rid, model)
    ) STRICT",
    "INSERT INTO memory_embeddings_v5 (rid, model, dims, vector, created_at)
     SELECT rid, model, dims, vector, created_at FROM memory_embeddings ORDER BY rid, model",
    "DROP TABLE memory_embeddings",
    "ALTER TABLE memory_embeddings_v5 RENAME TO memory_embeddings",
    "CREATE INDEX memory_embeddings_model ON memory_embeddings(model, rid)",
    EMBEDDINGS_BUMP_INSERT,
    EMBEDDINGS_BUMP_UPDATE,
    EMBEDDINGS_BUMP_DELETE,
    "UPDATE memory_state SET generation = generation + 1 WHERE id = 1",
];

/// Schema step 6: `private` memories. A private memory is never sent to a
/// model that is not on this machine: searches for a remote backend filter it out, in the text
/// search and in the vector index alike. Changing it moves the generation on, like a status
/// change, so a process holding the vector index reloads its filter fields.
pub(crate) const PRIVATE_MEMORIES: &[&str] = &[
    "ALTER TABLE memories ADD COLUMN private INTEGER NOT NULL DEFAULT 0 CHECK (private IN (0, 1))",
    "DROP TRIGGER memories_bump_update",
    "CREATE TRIGGER memories_bump_update AFTER UPDATE OF status, kind, categories, private \
     ON memories
     BEGIN UPDATE memory_state SET generation = generation + 1 WHERE id = 1; END",
    "UPDATE memory_state SET generation = generation + 1 WHERE id = 1",
];

/// Schema step 16: a memory the model stored in a run that had read outside text (files, web
/// pages, MCP results, messages from others) is `unconfirmed` until the user confirms it: listed,
/// never recalled into a prompt. Every memory before this step was confirmed.
pub(crate) const UNCONFIRMED: &str = "ALTER TABLE memories ADD COLUMN unconfirmed INTEGER NOT NULL \
     DEFAULT 0 CHECK (unconfirmed IN (0, 1))";
pub(crate) const DROP_BUMP_TRIGGER: &str = "DROP TRIGGER memories_bump_update";
/// A change to what filters see (now including `unconfirmed`) bumps the generation, so loaded
/// vector indexes reload.
pub(crate) const BUMP_TRIGGER_16: &str = "CREATE TRIGGER memories_bump_update AFTER UPDATE OF \
     status, kind, categories, private, unconfirmed ON memories
     BEGIN UPDATE memory_state SET generation = generation + 1 WHERE id = 1; END";
pub(crate) const BUMP_GENERATION: &str =
    "UPDATE memory_state SET generation = generation + 1 WHERE id = 1";

/// Schema step 15: a memory may have several vectors of one model, one per passage (a text
/// longer than its embedder takes is split into passages, and search scores the memory
/// by its best one). `memory_embeddings` gains `passage` (0 for the first, and for every row
/// stored before), its key becomes `(rid, model, passage)`; rows are copied in key order, and
/// the generation moves on so a process holding vectors loaded before reloads them.
pub(crate) const PASSAGES: &[&str] = &[
    "CREATE TABLE memory_embeddings_v15 (
        rid INTEGER NOT NULL REFERENCES memories(rid) ON DELETE CASCADE,
        model TEXT NOT NULL,
        passage INTEGER NOT NULL DEFAULT 0 CHECK (passage >= 0),
        dims INTEGER NOT NULL CHECK (dims > 0),
        vector BLOB NOT NULL CHECK (length(vector) = 4 * dims),
        created_at TEXT NOT NULL,
        UNIQUE (rid, model, passage)
    ) STRICT",
    "INSERT INTO memory_embeddings_v15 (rid, model, passage, dims, vector, created_at)
     SELECT rid, model, 0, dims, vector, created_at FROM memory_embeddings ORDER BY rid, model",
    "DROP TABLE memory_embeddings",
    "ALTER TABLE memory_embeddings_v15 RENAME TO memory_embeddings",
    "CREATE INDEX memory_embeddings_model ON memory_embeddings(model, rid)",
    EMBEDDINGS_BUMP_INSERT,
    EMBEDDINGS_BUMP_UPDATE,
    EMBEDDINGS_BUMP_DELETE,
    "UPDATE memory_state SET generation = generation + 1 WHERE id = 1",
];
