import ArgumentParser
import Foundation
import ReelExport
import ReelSystem

#if Photos
    import ReelImage
#endif

/// `reel image`: a photo as `PHImageManager.requestImage(for:targetSize:contentMode:options:)` gives
/// it: a target size in pixels or `max`, fit or fill, upright, sRGB, with the exports' metadata policy.
struct ImageCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "image",
        abstract: "Render a photo (HEIC, AVIF, JPEG, PNG, WebP, a GIF's one frame) at a size, upright and sRGB.")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var input: InputOptions
    @OptionGroup var library: LibraryOptions
    @OptionGroup var cache: CacheFolderOption
    @OptionGroup(title: "Remote assets") var remote: RemoteOptions

    @Argument(
        help:
            "The photo file, library:<localIdentifier> for a photo of the library (a Live or Motion Photo's still), or an https URL (with --network-access)."
    )
    var asset: String

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The target size in pixels (WxH), or max: the whole picture, no scaling or cropping. Never enlarged.",
            valueName: "WxH|max"))
    var size: String

    @Option(
        name: .long,
        help: ArgumentHelp(
            "fit (default): the picture fits inside the size; fill: it covers the size, cropped to it from the centre.",
            valueName: "fit|fill"))
    var contentMode = "fit"

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Render only this part of the upright picture, x,y,w,h in unit coordinates from the top left (PhotoKit's normalizedCropRect, e.g. 0.25,0.25,0.5,0.5); --size then applies to it.",
            valueName: "x,y,w,h"))
    var crop: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "PhotoKit's resizeMode. exact (default): the size asked (fit inside it, or fill it); fast: that size or the nearest larger one there is (a HEIC's embedded thumbnail, or for a library photo with --metadata strip a tier 'reel library cache' made, unscaled); none: the picture as stored, no scaling. A crop needs exact.",
            valueName: "none|fast|exact"))
    var resize = "exact"

    @Option(
        name: .long,
        help: ArgumentHelp(
            "PhotoKit's deliveryMode. high-quality (default): the final image only; opportunistic: a degraded image first (a HEIC's embedded thumbnail, a JPEG decoded at 1/8), then the final one at the same path; fast: the degraded image only, when the photo has one.",
            valueName: "opportunistic|high-quality|fast"))
    var delivery = Delivery.highQuality.rawValue

    /// PhotoKit's deliveryMode, as `--delivery` names it.
    enum Delivery: String, CaseIterable {
        /// A degraded image first, when the photo has a cheaper picture, then the final one.
        case opportunistic
        /// The final image only.
        case highQuality = "high-quality"
        /// The degraded image only, when the photo has one; else the final one.
        case fast
    }

    @Option(name: [.short, .long], help: ArgumentHelp("The image file to write.", valueName: "file"))
    var output: String

    @Option(
        name: .long,
        help: ArgumentHelp("jpeg, webp, png or avif. Default: the file's extension, else jpeg.", valueName: "format"))
    var format: String?

    @Option(name: .long, help: ArgumentHelp("1-100, higher is better (JPEG, WebP, AVIF).", valueName: "1-100"))
    var quality = 90

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Metadata to write: keep (all of it, EXIF Orientation 1), sharing (no location, device or content identifier), strip (none). Default: $REEL_METADATA, else keep.",
            valueName: "policy"))
    var metadata: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "srgb (default: every viewer reads it right) or p3: Display P3 with its ICC profile, kept even with --metadata strip, so an iPhone photo keeps its wider gamut.",
            valueName: "space"))
    var colour = "srgb"

    @Option(
        name: .long,
        help: ArgumentHelp(
            "PhotoKit's version of a library:<id> photo: current (default: its edit when it has one), unadjusted or original (the photo as taken). A photo file is its own every version.",
            valueName: "current|unadjusted|original"))
    var version = "current"

    @Flag(name: .long, help: "Replace the file if it exists.")
    var overwrite = false

    @Flag(
        name: .long,
        help:
            "Save the final image to the library (--library, $REEL_LIBRARY) as a new photo asset (PHAssetCreationRequest); the command completes only once it is there."
    )
    var saveToLibrary = false

    @Flag(
        name: .long,
        help:
            "Print each image written as one JSON line (file, width, height, format, degraded, requestID, source; savedLocalIdentifier with --save-to-library)."
    )
    var json = false

    /// `--size`: (0, 0) for max.
    static func box(_ text: String) -> (Int, Int)? {
        if text.lowercased() == "max" { return (0, 0) }
        let parts = text.lowercased().split(separator: "x", omittingEmptySubsequences: false)
        guard parts.count == 2, let width = Int(parts[0]), let height = Int(parts[1]), width > 0, height > 0 else {
            return nil
        }
        return (width, height)
    }

    /// `--crop`: four numbers, a rectangle inside the unit square with a width and height; nil otherwise.
    static func cropRect(_ text: String) -> (x: Double, y: Double, width: Double, height: Double)? {
        let numbers = text.split(separator: ",").compactMap { Double($0.trimmingCharacters(in: .whitespaces)) }
        guard numbers.count == 4, numbers.allSatisfy(\.isFinite) else { return nil }
        let (x, y, w, h) = (numbers[0], numbers[1], numbers[2], numbers[3])
        guard x >= 0, y >= 0, w > 0, h > 0, x + w <= 1 + 1e-9, y + h <= 1 + 1e-9 else { return nil }
        return (x, y, w, h)
    }

    static let formats = ["jpeg", "webp", "png", "avif"]

    /// The format `name` (jpeg, jpg, webp, png, avif), or nil.
    static func formatName(_ name: String) -> String? {
        let lowered = name.lowercased()
        if lowered == "jpg" { return "jpeg" }
        return formats.contains(lowered) ? lowered : nil
    }

    func validate() throws {
        if Self.box(size) == nil { throw ValidationError("cannot read --size '\(size)'; write WxH (1280x720) or max") }
        if !["fit", "fill"].contains(contentMode) {
            throw ValidationError("--content-mode is fit or fill, not '\(contentMode)'")
        }
        if !["none", "fast", "exact"].contains(resize) {
            throw ValidationError("--resize is none, fast or exact, not '\(resize)'")
        }
        if Delivery(rawValue: delivery) == nil {
            throw ValidationError("--delivery is opportunistic, high-quality or fast, not '\(delivery)'")
        }
        if crop != nil && resize != "exact" {
            throw ValidationError("a crop needs --resize exact (PhotoKit's rule), not --resize \(resize)")
        }
        if let crop, Self.cropRect(crop) == nil {
            throw ValidationError(
                "cannot use --crop '\(crop)'; write x,y,w,h inside the unit square, e.g. 0.25,0.25,0.5,0.5")
        }
        if !(1...100).contains(quality) { throw ValidationError("--quality must be between 1 and 100, not \(quality)") }
        if let format, Self.formatName(format) == nil {
            throw ValidationError("unknown image format '\(format)'; use jpeg, webp, png or avif")
        }
        if let metadata, MetadataPolicy(rawValue: metadata) == nil {
            throw ValidationError("--metadata is keep, sharing or strip, not '\(metadata)'")
        }
        // By name, as the other choices: a build without the Photos trait validates it too.
        if !["srgb", "p3"].contains(colour) {
            throw ValidationError("--colour is srgb or p3, not '\(colour)'")
        }
        if !["current", "unadjusted", "original"].contains(version) {
            throw ValidationError("--version is current, unadjusted or original, not '\(version)'")
        }
        if saveToLibrary && delivery == Delivery.fast.rawValue {
            throw ValidationError(
                "--save-to-library saves the final image; --delivery fast writes only a degraded one (use opportunistic or high-quality)"
            )
        }
        let named = Self.formatName(URL(fileURLWithPath: output).pathExtension)
        if let format, let named, Self.formatName(format) != named {
            throw ValidationError("the file's extension says \(named) but --format says \(format)")
        }
    }

    /// One `--json` line.
    struct Line: Encodable {
        var file: String
        var width: Int
        var height: Int
        var format: String
        var contentMode: String
        var metadata: String
        /// Whether this is the quick, low-quality image (opportunistic delivery writes it first, then the
        /// final one at the same path; fast delivery writes only it).
        var degraded = false
        /// The request's identifier: the same on both lines of an opportunistic request.
        var requestID: String
        /// Where the pixels came from: `picture`, `embedded-thumbnail`, `reduced-decode` or `cached-tier`.
        var source: String
        var resizeMode: String
        var deliveryMode: String
        /// `srgb` or `p3`.
        var colour: String
        /// The library asset rendered, for a `library:<id>` request.
        var localIdentifier: String? = nil
        /// The asset's resource rendered (`photo`, or `fullSizePhoto`: its edit), for a `library:<id>` request.
        var resource: String? = nil
        /// The new asset the final image became, with `--save-to-library` (export's key).
        var savedLocalIdentifier: String? = nil
        /// Milliseconds from the command's start (its options read) to this image written: the request's
        /// own time, without the process's start.
        var elapsedMilliseconds = 0.0
    }

    static func milliseconds(since start: ContinuousClock.Instant) -> Double {
        let elapsed = (ContinuousClock.now - start).components
        return ((Double(elapsed.seconds) * 1000 + Double(elapsed.attoseconds) / 1e15) * 10).rounded() / 10
    }

    func run() async throws {
        global.bootstrapLogging()
        let local = try await LocalInput.resolve(asset, remote: remote, limits: input.limits, json: false)
        defer { local.cleanUp() }
        var command = self
        command.asset = local.path
        do {
            try await command.render(local.limits(input.limits))
        } catch {
            throw local.rename(error)
        }
    }

    private func render(_ limits: InputLimits) async throws {
        let started = ContinuousClock.now
        #if Photos
            // A library asset is its photo resource (a Live or Motion Photo's still), checked to be
            // the file the library indexed.
            var path = asset
            let identifier = LibraryReference.identifier(in: asset)
            var resource: String?
            let link = library.link(limits: limits, queueDatabase: StoreOptions.environmentDatabaseURL)
            // The library a save goes to is opened before any work: one that cannot be opened fails at once.
            if identifier != nil || saveToLibrary { try link.openNow() }
            if let identifier {
                // The version picks the file: the edit (`fullSizePhoto`) for current when there is one.
                resource = try await link.photoResourceName(identifier, version: version)
                let resolved = try await link.resolve(identifier, resource: resource)
                try resolved.checkUnchanged()
                path = resolved.path
            }
            guard let photo = PhotoInput.signature(path) else {
                throw ExportError(
                    .unreadableInput,
                    "\(asset) is not a photo Reel renders (HEIC, AVIF, JPEG, PNG, WebP, a GIF of one picture); a video's frames: reel thumbnail"
                )
            }
            let policy =
                try metadata.flatMap(MetadataPolicy.init(rawValue:)) ?? MetadataDefault.fromEnvironment() ?? .keep
            let chosen =
                format.flatMap(Self.formatName) ?? Self.formatName(URL(fileURLWithPath: output).pathExtension) ?? "jpeg"
            let outputFormat = ImageOutputFormat(rawValue: chosen) ?? .jpeg
            let file = URL(fileURLWithPath: output)
            var isDirectory: ObjCBool = false
            let folder = file.deletingLastPathComponent()
            guard FileManager.default.fileExists(atPath: folder.path, isDirectory: &isDirectory), isDirectory.boolValue
            else {
                throw ExportError(.outputFailed, "the output folder \(folder.path) does not exist", retryable: false)
            }
            if !overwrite && FileManager.default.fileExists(atPath: file.path) {
                throw ExportError(.outputExists, "\(file.path) already exists (ask to overwrite it: --overwrite)")
            }
            let box = Self.box(size) ?? (0, 0)
            let photoMetadata: PhotoMetadata =
                switch policy {
                case .keep: .keep
                case .forSharing: .sharing
                case .strip: .strip
                }
            var options = PhotoRenderOptions(
                maxWidth: box.0, maxHeight: box.1, fill: contentMode == "fill" && box != (0, 0),
                format: outputFormat, quality: quality, metadata: photoMetadata)
            options.crop = crop.flatMap(Self.cropRect)
            options.resizeMode = PhotoResizeMode(rawValue: resize) ?? .exact
            options.colour = PhotoColour(rawValue: colour) ?? .sRGB
            let requestID = UUID().uuidString.lowercased()
            func report(_ image: RenderedPhoto, saved: String? = nil) {
                if json {
                    CLI.printLine(
                        CLI.jsonLine(
                            Line(
                                file: file.path, width: image.width, height: image.height,
                                format: outputFormat.rawValue, contentMode: contentMode, metadata: policy.rawValue,
                                degraded: image.degraded, requestID: requestID, source: image.source.rawValue,
                                resizeMode: resize, deliveryMode: delivery, colour: colour,
                                localIdentifier: identifier, resource: resource, savedLocalIdentifier: saved,
                                elapsedMilliseconds: Self.milliseconds(since: started))))
                } else {
                    let source =
                        image.source == .picture
                        ? "" : ", its \(image.source.rawValue.replacingOccurrences(of: "-", with: " "))"
                    CLI.printLine(
                        "wrote \(file.path) (\(image.width)x\(image.height) \(outputFormat.rawValue)\(image.degraded ? ", degraded" : ""), from a \(photo.name) photo\(source))"
                    )
                    if let saved { CLI.printLine("saved to the library as \(saved)") }
                }
            }
            // Done only once the final image is an asset of the library (saving it again is harmless);
            // a failed save leaves the image written.
            func save() async throws -> String? {
                saveToLibrary ? try await link.saveOutput(at: file.path, from: nil) : nil
            }
            // A library photo's fast request: a tier `reel library cache` made, without decoding the photo.
            if let identifier, options.resizeMode == .fast,
                let served = try await LibraryCache.served(
                    identifier, resource: resource, library: library, cache: cache, limits: limits,
                    targetSize: box == (0, 0) ? .maximum : ImageTargetSize(width: box.0, height: box.1),
                    contentMode: contentMode == "fill" ? .aspectFill : .aspectFit, options: options)
            {
                try AtomicFile.write(served.data, to: file, overwrite: overwrite)
                report(served, saved: try await save())
                return
            }
            // Opportunistic and fast delivery: the quick picture first, written whole (a reader of the
            // path sees it, then the final one replacing it). A photo without one, or whose quick picture
            // cannot be made, gets the final image alone.
            var wroteDegraded = false
            if delivery != Delivery.highQuality.rawValue,
                let quick = try? await PhotoInput.renderDegraded(path, options, limits: limits)
            {
                try AtomicFile.write(quick.data, to: file, overwrite: overwrite)
                report(quick)
                if delivery == Delivery.fast.rawValue { return }
                wroteDegraded = true
            }
            let image: RenderedPhoto
            do {
                image = try await PhotoInput.render(path, options, limits: limits)
                try AtomicFile.write(image.data, to: file, overwrite: overwrite || wroteDegraded)
            } catch {
                // No degraded picture is left standing for a request that failed.
                if wroteDegraded { try? FileManager.default.removeItem(at: file) }
                throw error
            }
            report(image, saved: try await save())
        #else
            throw LeftOut.photos.failure
        #endif
    }
}
