import Foundation

/// The presets Reel knows: the shipped ones (embedded from `Presets/*.json` at build time) plus any
/// from a user folder, which may add presets or override shipped ones of the same name.
public struct PresetLibrary: Sendable {
    /// All presets, in display order (shipped order first, then user-only ones by name).
    public let presets: [Preset]

    /// The shipped presets. Crashes only if a shipped file is malformed, which a test prevents.
    public static let shipped: PresetLibrary = {
        do {
            return try PresetLibrary(userFolder: nil)
        } catch {
            fatalError("a shipped preset is malformed: \(error)")
        }
    }()

    /// Loads the shipped presets and, if given, every `*.json` in `userFolder`.
    /// Throws `ExportError` (`invalid-preset`) naming the file and field of a malformed preset.
    public init(userFolder: URL?) throws(ExportError) {
        var byName: [String: Preset] = [:]
        var order: [String] = []
        var sourceFiles: [String: String] = [:]
        for file in embeddedPresetFiles {
            guard let data = Data(base64Encoded: file.base64) else {
                throw ExportError(.invalidPreset, "Presets/\(file.name): not readable")
            }
            let preset = try PresetLibrary.decode(data, file: "Presets/\(file.name)")
            byName[preset.name.lowercased()] = preset
            order.append(preset.name.lowercased())
            sourceFiles[preset.name.lowercased()] = "Presets/\(file.name)"
        }
        if let userFolder {
            let files: [URL]
            do {
                files = try FileManager.default.contentsOfDirectory(at: userFolder, includingPropertiesForKeys: nil)
                    .filter { $0.pathExtension.lowercased() == "json" }
                    .sorted { $0.lastPathComponent < $1.lastPathComponent }
            } catch {
                throw ExportError(.invalidPreset, "cannot read the presets folder \(userFolder.path)")
            }
            for url in files {
                guard let data = FileManager.default.contents(atPath: url.path) else {
                    throw ExportError(.invalidPreset, "\(url.path): cannot read the file")
                }
                var preset = try PresetLibrary.decode(data, file: url.path)
                let key = preset.name.lowercased()
                if let shipped = byName[key] {
                    // An override keeps answering to the shipped preset's short names.
                    if preset.aliases == nil { preset.aliases = shipped.aliases }
                    if preset.order == nil { preset.order = shipped.order }
                } else {
                    order.append(key)
                }
                byName[key] = preset
                sourceFiles[key] = url.path
            }
        }
        presets = PresetLibrary.sorted(order.compactMap { byName[$0] })
        // A ladder preset's rungs name video presets with a box, of this library, of one codec: H.264,
        // HEVC or AV1 (the last two keep HDR).
        for preset in presets {
            var codecs: Set<String> = []
            for name in preset.ladder?.rungs ?? [] {
                let rung = try? self.preset(named: name)
                guard let rung, rung.kind == .video, let video = rung.video, video.box != nil else {
                    throw ExportError(
                        .invalidPreset,
                        "\(sourceFiles[preset.name.lowercased()] ?? preset.name): field 'ladder.rungs' names '\(name)', which is not an H.264, HEVC or AV1 video preset with a box"
                    )
                }
                codecs.insert(video.codec.rawValue)
            }
            if codecs.count > 1 {
                throw ExportError(
                    .invalidPreset,
                    "\(sourceFiles[preset.name.lowercased()] ?? preset.name): field 'ladder.rungs' mixes codecs (\(codecs.sorted().joined(separator: ", "))); name presets of one codec"
                )
            }
        }
    }

    /// By each preset's `order` (the shipped files number theirs: quality presets, sizes, HEVC, audio,
    /// passthrough, ladders), then by name.
    private static func sorted(_ presets: [Preset]) -> [Preset] {
        presets.sorted { a, b in
            let (oa, ob) = (a.order ?? Int.max, b.order ?? Int.max)
            return oa != ob ? oa < ob : a.name.lowercased() < b.name.lowercased()
        }
    }

    /// The ladder presets' names, comma-separated (for messages).
    var ladderNames: String {
        let names = presets.filter { $0.kind == .ladder }.map(\.name)
        return names.isEmpty ? "none" : names.joined(separator: ", ")
    }

    /// Finds a preset by name, alias or Apple name, ignoring case (`1280x720`,
    /// `AVAssetExportPreset1280x720`, `medium`). Throws `unknown-preset` listing the valid names.
    public func preset(named name: String) throws(ExportError) -> Preset {
        var key = name.trimmingCharacters(in: .whitespaces).lowercased()
        let applePrefix = "avassetexportpreset"
        if key.hasPrefix(applePrefix) { key.removeFirst(applePrefix.count) }
        for preset in presets {
            if preset.name.lowercased() == key { return preset }
        }
        for preset in presets where (preset.aliases ?? []).contains(where: { $0.lowercased() == key }) {
            return preset
        }
        // A slip of one or two characters names the preset it was meant to be (`1280x720p`).
        let names = presets.flatMap { preset in ([preset.name] + (preset.aliases ?? [])).map { ($0, preset.name) } }
        let hint = Spelling.closest(to: key, among: names.map(\.0)).flatMap { close in
            names.first { $0.0 == close }.map { " (did you mean '\($0.1)'?)" }
        }
        throw ExportError(
            .unknownPreset,
            "unknown preset '\(name)'\(hint ?? ""); known presets: \(presets.map(\.name).joined(separator: ", "))")
    }

    static func decode(_ data: Data, file: String) throws(ExportError) -> Preset {
        let unknown = unknownKeys(data)
        if !unknown.isEmpty { throw ExportError(.invalidPreset, "\(file): \(unknown.joined(separator: ", "))") }
        let preset: Preset
        do {
            preset = try JSONDecoder().decode(Preset.self, from: data)
        } catch let error as DecodingError {
            throw ExportError(.invalidPreset, "\(file): \(describe(error))")
        } catch {
            throw ExportError(.invalidPreset, "\(file): \(error.localizedDescription)")
        }
        do {
            try preset.validate()
        } catch {
            throw ExportError(.invalidPreset, "\(file): field '\(error.field)' \(error.problem)")
        }
        return preset
    }

    /// Keys a preset file has that no field reads (`crff`): a typo that would otherwise be ignored.
    /// Nothing when the file is not a JSON object (decoding then says what is wrong).
    static func unknownKeys(_ data: Data) -> [String] {
        guard let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else { return [] }
        var unknown = StrictKeys.unknown(in: object, known: knownKeys.top)
        if let video = object["video"] as? [String: Any] {
            unknown += StrictKeys.unknown(in: video, known: knownKeys.video, prefix: "video.")
        }
        if let audio = object["audio"] as? [String: Any] {
            unknown += StrictKeys.unknown(in: audio, known: knownKeys.audio, prefix: "audio.")
        }
        if let ladder = object["ladder"] as? [String: Any] {
            unknown += StrictKeys.unknown(
                in: ladder, known: StrictKeys.propertyNames(of: Preset.Ladder(rungs: [])), prefix: "ladder.")
        }
        return unknown
    }

    /// The fields of a preset file, read off the types themselves so a new field is known at once.
    static let knownKeys: (top: Set<String>, video: Set<String>, audio: Set<String>) = {
        let audio = Preset.Audio(codec: "aac", bitrate: 0, maxChannels: 0)
        let video = Preset.Video(codec: .h264, encoderPreset: "", crf: 0)
        let preset = Preset(name: "", summary: "", kind: .video, video: video, audio: audio)
        return (
            StrictKeys.propertyNames(of: preset), StrictKeys.propertyNames(of: video),
            StrictKeys.propertyNames(of: audio)
        )
    }()

    private static func describe(_ error: DecodingError) -> String {
        func path(_ codingPath: [any CodingKey], _ last: (any CodingKey)? = nil) -> String {
            let keys = (codingPath + (last.map { [$0] } ?? [])).map { key in
                key.intValue.map { "[\($0)]" } ?? key.stringValue
            }
            return keys.joined(separator: ".").replacingOccurrences(of: ".[", with: "[")
        }
        switch error {
        case .keyNotFound(let key, let context):
            return "field '\(path(context.codingPath, key))' is missing"
        case .typeMismatch(let type, let context):
            return "field '\(path(context.codingPath))' should be \(describe(type))"
        case .valueNotFound(let type, let context):
            return "field '\(path(context.codingPath))' should be \(describe(type)), not null"
        case .dataCorrupted(let context):
            if context.codingPath.isEmpty { return "not valid JSON" }
            return "field '\(path(context.codingPath))' has an invalid value (\(context.debugDescription))"
        @unknown default:
            return "cannot be decoded"
        }
    }

    private static func describe(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Int.Type, is Double.Type: "a number"
        case is Bool.Type: "true or false"
        case is [Any].Type: "a list"
        default: "an object"
        }
    }
}
