#if !Fleet
    import ServiceLifecycle
#endif

/// What a build without one of Package.swift's traits leaves out (Scripts/demo builds `reel` with
/// `--disable-default-traits`): a command that needs it fails with one line naming the flag that
/// brings it back, before it touches the queue (exit 69, unavailable).
enum LeftOut {
    /// The fleet's PostgreSQL store (ReelFleet, ReelLibraryFleet): `--store`, `REEL_STORE`, `reel db`,
    /// a `postgres://` library.
    case fleet
    /// The ops HTTP server (ReelServer): `reel work --metrics-port`.
    case server
    /// Photos (ReelImage, libvips): `reel probe` and `reel thumbnail` of a photo.
    case photos
    /// Remote assets (ReelRemote, async-http-client): an http(s) URL as the asset.
    case remote

    var failure: CLIFailure {
        let (what, trait) =
            switch self {
            case .fleet: ("the fleet's PostgreSQL store (--store, REEL_STORE, reel db)", "Fleet")
            case .server: ("the ops server (--metrics-port)", "Server")
            case .photos: ("photos (libvips: probing and rendering HEIC, JPEG, PNG, WebP, AVIF, GIF)", "Photos")
            case .remote: ("remote assets (an http or https URL as the asset)", "Remote")
            }
        return CLIFailure(
            message:
                "this reel was built without \(what): rebuild with `swift build --product reel --traits \(trait)` (or plain `swift build`, which has every trait)",
            exitStatus: .unavailable)
    }
}

#if !Fleet
    /// ReelFleet's store in a build without the Fleet trait: no value of it can exist (opening one
    /// throws `LeftOut.fleet`), so the paths that would share one with the photo library never run.
    enum PostgresStore: Service {
        func run() async throws {
            switch self {}
        }
    }
#endif
