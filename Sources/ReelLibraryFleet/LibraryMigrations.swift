import ReelFleet

/// The photo library's tables in the fleet's database: its own numbered migrations, recorded in its
/// own table (`reel_library_schema_version`) under its own advisory lock, beside the queue's (which
/// `reel db migrate` applies first). Applying them is idempotent and safe from several machines at
/// once, as the queue's are (`Schema.migrate`). A migration, once released, is never edited.
///
/// The columns mirror the SQLite store's (`SQLiteMigrations`), so one fetch statement serves both
/// (`AssetSelect`): booleans are 0 or 1, dates seconds since 1970 (`double precision`). Text sorts by
/// byte (`COLLATE "C"`), as SQLite's does, whatever the database's collation. Content identifiers
/// match case-insensitively through `lower()` (SQLite's `COLLATE NOCASE`).
enum LibraryMigrations {
    /// The advisory lock the library's migrations hold ("rlib" in ASCII; the queue's is "reel").
    static let lockKey: Int64 = 0x726C_6962
    static let versionTable = "reel_library_schema_version"

    static let migrations: [Schema.Migration] = [
        Schema.Migration(
            version: 1, description: "the photo library: files, assets, skips, albums and the change history",
            statements: [
                // One row: the library's identity and its change number. Every write transaction
                // increments the number first, so writers take turns on this row (see
                // `PostgresLibraryStore` on why not a sequence).
                """
                CREATE TABLE reel_library_state (
                    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
                    identifier text NOT NULL,
                    sequence bigint NOT NULL DEFAULT 0)
                """,
                "INSERT INTO reel_library_state (identifier) VALUES (upper(gen_random_uuid()::text))",
                """
                CREATE TABLE reel_library_file (
                    path text COLLATE "C" PRIMARY KEY,
                    folder text COLLATE "C" NOT NULL,
                    name text COLLATE "C" NOT NULL,
                    size bigint NOT NULL,
                    modified_ns bigint NOT NULL,
                    content_hash text NOT NULL,
                    content_identifier text,
                    media_type bigint NOT NULL,
                    facts text NOT NULL)
                """,
                "CREATE INDEX reel_library_file_by_folder ON reel_library_file (folder, name)",
                "CREATE INDEX reel_library_file_by_hash ON reel_library_file (content_hash)",
                "CREATE INDEX reel_library_file_by_content_identifier ON reel_library_file (lower(content_identifier))",
                """
                CREATE TABLE reel_library_asset (
                    local_identifier text COLLATE "C" PRIMARY KEY,
                    content_hash text NOT NULL,
                    copy_number bigint NOT NULL,
                    path text COLLATE "C" NOT NULL UNIQUE,
                    folder text COLLATE "C" NOT NULL,
                    stem text COLLATE "C" NOT NULL,
                    paired_video_path text COLLATE "C" UNIQUE,
                    media_type bigint NOT NULL,
                    media_subtypes bigint NOT NULL,
                    pixel_width bigint NOT NULL,
                    pixel_height bigint NOT NULL,
                    duration double precision NOT NULL,
                    creation_date double precision,
                    creation_time_zone_offset bigint,
                    modification_date double precision NOT NULL,
                    latitude double precision,
                    longitude double precision,
                    altitude double precision,
                    is_favorite bigint NOT NULL DEFAULT 0,
                    is_hidden bigint NOT NULL DEFAULT 0,
                    burst_identifier text COLLATE "C",
                    playback_style bigint NOT NULL,
                    source_type bigint NOT NULL,
                    original_filename text COLLATE "C" NOT NULL,
                    content_identifier text,
                    pairing text,
                    still_image_time double precision,
                    added_date double precision NOT NULL,
                    created_seq bigint NOT NULL,
                    changed_seq bigint NOT NULL)
                """,
                "CREATE INDEX reel_library_asset_by_hash ON reel_library_asset (content_hash, copy_number)",
                "CREATE INDEX reel_library_asset_by_folder ON reel_library_asset (folder, stem)",
                "CREATE INDEX reel_library_asset_by_creation ON reel_library_asset (creation_date)",
                "CREATE INDEX reel_library_asset_by_burst ON reel_library_asset (burst_identifier, creation_date)",
                "CREATE INDEX reel_library_asset_by_change ON reel_library_asset (changed_seq)",
                "CREATE INDEX reel_library_asset_by_created ON reel_library_asset (created_seq)",
                """
                CREATE INDEX reel_library_asset_by_content_identifier
                ON reel_library_asset (lower(content_identifier), media_type, path)
                """,
                """
                CREATE TABLE reel_library_deleted_asset (
                    local_identifier text COLLATE "C" PRIMARY KEY,
                    created_seq bigint NOT NULL,
                    deleted_seq bigint NOT NULL)
                """,
                "CREATE INDEX reel_library_deleted_by_seq ON reel_library_deleted_asset (deleted_seq)",
                """
                CREATE TABLE reel_library_skipped_file (
                    path text COLLATE "C" PRIMARY KEY,
                    folder text COLLATE "C" NOT NULL,
                    reason text NOT NULL,
                    size bigint,
                    modified_ns bigint)
                """,
                "CREATE INDEX reel_library_skipped_by_folder ON reel_library_skipped_file (folder)",
                """
                CREATE TABLE reel_library_album (
                    identifier text COLLATE "C" PRIMARY KEY,
                    title text COLLATE "C" NOT NULL)
                """,
                """
                CREATE TABLE reel_library_album_asset (
                    album text COLLATE "C" NOT NULL REFERENCES reel_library_album (identifier) ON DELETE CASCADE,
                    local_identifier text COLLATE "C" NOT NULL
                        REFERENCES reel_library_asset (local_identifier) ON DELETE CASCADE,
                    position bigint NOT NULL,
                    PRIMARY KEY (album, local_identifier))
                """,
                "CREATE INDEX reel_library_album_asset_by_asset ON reel_library_album_asset (local_identifier)",
            ]),
        Schema.Migration(
            version: 2, description: "edits: the rendered edit, its AAE and movie beside the original, hasAdjustments",
            statements: [
                "ALTER TABLE reel_library_asset ADD COLUMN full_size_photo_path text COLLATE \"C\"",
                "ALTER TABLE reel_library_asset ADD COLUMN adjustment_data_path text COLLATE \"C\"",
                "ALTER TABLE reel_library_asset ADD COLUMN full_size_paired_video_path text COLLATE \"C\"",
                "ALTER TABLE reel_library_asset ADD COLUMN has_adjustments bigint NOT NULL DEFAULT 0",
                "CREATE INDEX reel_library_asset_by_full_size_photo ON reel_library_asset (full_size_photo_path)",
                "CREATE INDEX reel_library_asset_by_adjustment_data ON reel_library_asset (adjustment_data_path)",
                """
                CREATE INDEX reel_library_asset_by_full_size_paired_video
                ON reel_library_asset (full_size_paired_video_path)
                """,
            ]),
    ]

    /// The newest version this build knows.
    static var latest: Int { migrations.last?.version ?? 0 }
}
