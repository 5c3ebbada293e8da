#if PhotoLibrary
    import GRDB
#endif

// The photo library's embedded store, left out of a build without the PhotoLibrary trait (GRDB).
#if PhotoLibrary
    /// The SQLite store's schema, as versioned migrations (GRDB's `DatabaseMigrator` records which
    /// ran in `grdb_migrations`). A migration, once released, is never edited: later changes are new
    /// migrations appended here.
    enum SQLiteMigrations {
        static var migrator: DatabaseMigrator {
            var migrator = DatabaseMigrator()
            migrator.registerMigration("v1-library") { db in
                try db.execute(
                    sql: """
                        CREATE TABLE library_info (key TEXT PRIMARY KEY, value TEXT NOT NULL);
                        CREATE TABLE file (
                            path TEXT PRIMARY KEY,
                            folder TEXT NOT NULL,
                            name TEXT NOT NULL,
                            size INTEGER NOT NULL,
                            modified_ns INTEGER NOT NULL,
                            content_hash TEXT NOT NULL,
                            content_identifier TEXT COLLATE NOCASE,
                            media_type INTEGER NOT NULL,
                            facts TEXT NOT NULL
                        );
                        CREATE INDEX file_by_folder ON file(folder, name);
                        CREATE INDEX file_by_hash ON file(content_hash);
                        CREATE INDEX file_by_content_identifier ON file(content_identifier);
                        CREATE TABLE asset (
                            local_identifier TEXT PRIMARY KEY,
                            content_hash TEXT NOT NULL,
                            copy_number INTEGER NOT NULL,
                            path TEXT NOT NULL UNIQUE,
                            folder TEXT NOT NULL,
                            stem TEXT NOT NULL,
                            paired_video_path TEXT UNIQUE,
                            media_type INTEGER NOT NULL,
                            media_subtypes INTEGER NOT NULL,
                            pixel_width INTEGER NOT NULL,
                            pixel_height INTEGER NOT NULL,
                            duration REAL NOT NULL,
                            creation_date REAL,
                            creation_time_zone_offset INTEGER,
                            modification_date REAL NOT NULL,
                            latitude REAL,
                            longitude REAL,
                            altitude REAL,
                            is_favorite INTEGER NOT NULL DEFAULT 0,
                            is_hidden INTEGER NOT NULL DEFAULT 0,
                            burst_identifier TEXT,
                            playback_style INTEGER NOT NULL,
                            source_type INTEGER NOT NULL,
                            original_filename TEXT NOT NULL,
                            content_identifier TEXT COLLATE NOCASE,
                            pairing TEXT,
                            still_image_time REAL,
                            added_date REAL NOT NULL,
                            created_seq INTEGER NOT NULL,
                            changed_seq INTEGER NOT NULL
                        );
                        CREATE INDEX asset_by_hash ON asset(content_hash, copy_number);
                        CREATE INDEX asset_by_folder ON asset(folder, stem);
                        CREATE INDEX asset_by_creation ON asset(creation_date);
                        CREATE INDEX asset_by_burst ON asset(burst_identifier, creation_date);
                        CREATE INDEX asset_by_change ON asset(changed_seq);
                        CREATE INDEX asset_by_created ON asset(created_seq);
                        CREATE INDEX asset_by_content_identifier ON asset(content_identifier, media_type, path);
                        CREATE TABLE deleted_asset (
                            local_identifier TEXT PRIMARY KEY,
                            created_seq INTEGER NOT NULL,
                            deleted_seq INTEGER NOT NULL
                        );
                        CREATE INDEX deleted_by_seq ON deleted_asset(deleted_seq);
                        CREATE TABLE skipped_file (
                            path TEXT PRIMARY KEY, folder TEXT NOT NULL, reason TEXT NOT NULL, size INTEGER, modified_ns INTEGER
                        );
                        CREATE INDEX skipped_by_folder ON skipped_file(folder);
                        CREATE TABLE album (identifier TEXT PRIMARY KEY, title TEXT NOT NULL);
                        CREATE TABLE album_asset (
                            album TEXT NOT NULL REFERENCES album(identifier) ON DELETE CASCADE,
                            local_identifier TEXT NOT NULL REFERENCES asset(local_identifier) ON DELETE CASCADE,
                            position INTEGER NOT NULL,
                            PRIMARY KEY (album, local_identifier)
                        );
                        CREATE INDEX album_asset_by_asset ON album_asset(local_identifier);
                        """)
                try db.execute(
                    sql: "INSERT INTO library_info (key, value) VALUES ('identifier', ?), ('sequence', '0')",
                    arguments: [LibraryIdentity.randomUUID()])
            }
            // Edits (`EditLayout`): the rendered edit, its AAE and an edited Live Photo's movie beside
            // the original, and PhotoKit's `hasAdjustments`. Indexed for the unowned-files query.
            migrator.registerMigration("v2-edits") { db in
                try db.execute(
                    sql: """
                        ALTER TABLE asset ADD COLUMN full_size_photo_path TEXT;
                        ALTER TABLE asset ADD COLUMN adjustment_data_path TEXT;
                        ALTER TABLE asset ADD COLUMN full_size_paired_video_path TEXT;
                        ALTER TABLE asset ADD COLUMN has_adjustments INTEGER NOT NULL DEFAULT 0;
                        CREATE INDEX asset_by_full_size_photo ON asset(full_size_photo_path);
                        CREATE INDEX asset_by_adjustment_data ON asset(adjustment_data_path);
                        CREATE INDEX asset_by_full_size_paired_video ON asset(full_size_paired_video_path);
                        """)
            }
            return migrator
        }
    }
#endif
