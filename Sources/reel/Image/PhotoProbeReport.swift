#if Photos
    import Foundation
    import ReelExport
    import ReelImage
    import ReelLibrary

    /// What `reel probe` prints for a photo: the picture as ReelImage reads it (size as displayed,
    /// orientation, colour), and the metadata the photo library's parsers read when it indexes the file.
    struct PhotoProbeReport: Encodable {
        var path: String
        var kind = "photo"
        var format: String
        var bytes: Int64?
        var displayWidth: Int
        var displayHeight: Int
        /// The EXIF orientation a render applies (1: stored upright, or HEIF's transform applied).
        var orientation: Int
        var colourSpace: String
        var iccProfile: String?
        /// HEIF's nclx colour box by name, when it has one.
        var nclx: String?
        /// HEIF: a depth image, an HDR gain map, embedded thumbnails.
        var hasDepth: Bool?
        var hasGainMap: Bool?
        var embeddedThumbnails: Int?
        var bitDepth: Int
        var hasAlpha: Bool
        var pages: Int
        /// When it was captured, ISO 8601 in the zone the camera recorded (`2020-05-04T18:39:11-04:00`),
        /// else in UTC.
        var creationDate: String?
        /// The capture's offset from UTC as recorded (`-04:00`), when it was.
        var timeZone: String?
        var latitude: Double?
        var longitude: Double?
        var altitude: Double?
        var make: String?
        var model: String?
        var contentIdentifier: String?
        var isHDR: Bool?
        var motionPhoto: Bool?
        /// Why the metadata could not be read (the picture still could be).
        var metadataProblem: String?

        init(path: String, info: PhotoInfo, facts: Result<FileFacts, FileInspector.Refusal>) {
            self.path = path
            format = info.format.rawValue
            bytes = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value
            displayWidth = info.width
            displayHeight = info.height
            orientation = info.orientation
            colourSpace = info.colourSpace
            iccProfile = info.iccProfile
            nclx = info.nclx
            hasDepth = info.hasDepth
            hasGainMap = info.hasGainMap
            embeddedThumbnails = info.embeddedThumbnails
            bitDepth = info.bitDepth
            hasAlpha = info.hasAlpha
            pages = info.pages
            switch facts {
            case .success(let facts):
                creationDate = facts.creationDate.map { date in
                    let formatter = ISO8601DateFormatter()
                    if let offset = facts.creationTimeZoneOffset, let zone = TimeZone(secondsFromGMT: offset) {
                        formatter.timeZone = zone
                    }
                    return formatter.string(from: date)
                }
                timeZone = facts.creationTimeZoneOffset.map(Self.offset)
                latitude = facts.latitude
                longitude = facts.longitude
                altitude = facts.altitude
                make = facts.make
                model = facts.model
                contentIdentifier = facts.contentIdentifier
                isHDR = facts.isHDR ? true : nil
                motionPhoto = facts.motionPhoto != nil ? true : nil
            case .failure(let refusal):
                metadataProblem = refusal.reason
            }
        }

        /// The library's reading of the file's headers (what a scan indexes).
        static func facts(_ path: String, _ limits: InputLimits) -> Result<FileFacts, FileInspector.Refusal> {
            do {
                return .success(try FileInspector.inspect(path: path, limits: limits))
            } catch {
                return .failure(error)
            }
        }

        /// `+02:00`, `-04:00` from seconds east of UTC.
        static func offset(_ seconds: Int) -> String {
            let minutes = abs(seconds) / 60
            return (seconds < 0 ? "-" : "+") + String(format: "%02d:%02d", minutes / 60, minutes % 60)
        }

        func printText() {
            CLI.printLine(path)
            CLI.printLine(
                "  photo      \(format)" + (bytes.map { ", \(CLI.formatBytes($0))" } ?? "")
                    + (pages > 1 ? ", \(pages) pictures (the first is rendered)" : ""))
            CLI.printLine(
                "  display    \(displayWidth)x\(displayHeight)"
                    + (orientation != 1 ? ", EXIF orientation \(orientation) applied" : ", upright"))
            CLI.printLine(
                "  colour     \(colourSpace), \(bitDepth)-bit" + (iccProfile.map { ", ICC \($0)" } ?? "")
                    + (nclx.map { ", nclx \($0)" } ?? "") + (hasAlpha ? ", alpha" : "") + (isHDR == true ? ", HDR" : "")
            )
            if hasDepth != nil || hasGainMap != nil {
                let parts = [
                    hasDepth == true ? "a depth image" : "no depth image",
                    hasGainMap == true ? "an HDR gain map" : "no gain map",
                    "\(embeddedThumbnails ?? 0) embedded thumbnail(s)",
                ]
                CLI.printLine("  images     " + parts.joined(separator: ", "))
            }
            if let creationDate { CLI.printLine("  created    \(creationDate)") }
            if let latitude, let longitude {
                CLI.printLine(
                    "  location   " + String(format: "%+.5f %+.5f", latitude, longitude)
                        + (altitude.map { String(format: ", %.1f m", $0) } ?? ""))
            }
            if make != nil || model != nil {
                CLI.printLine("  device     \([make, model].compactMap { $0 }.joined(separator: " "))")
            }
            if let contentIdentifier { CLI.printLine("  content id \(contentIdentifier)") }
            if motionPhoto == true { CLI.printLine("  motion     a Motion Photo (an embedded video)") }
            if let metadataProblem { CLI.printLine("  metadata   not read: \(metadataProblem)") }
        }
    }
#endif
