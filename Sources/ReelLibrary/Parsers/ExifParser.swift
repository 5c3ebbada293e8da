import Foundation
import ReelBoxes

/// What Reel takes from an Exif block (a TIFF structure): capture time and zone, orientation, size,
/// GPS, camera, and Apple's MakerNote (content identifier, HDR, burst).
struct ExifFacts: Sendable, Equatable {
    var dateTimeOriginal: String?
    var offsetTimeOriginal: String?
    var subSecTimeOriginal: String?
    /// 1…8, as Exif tag 0x0112.
    var orientation: Int?
    var pixelXDimension: Int?
    var pixelYDimension: Int?
    var latitude: Double?
    var longitude: Double?
    var altitude: Double?
    var make: String?
    var model: String?
    var apple: AppleMakerNote?
    var warnings: [String] = []

    /// Capture time: DateTimeOriginal read in OffsetTimeOriginal's zone (UTC when there is none, and
    /// then no offset is returned), with SubSecTimeOriginal's fraction.
    var creationDate: (date: Date, offset: Int?)? {
        guard let text = dateTimeOriginal else { return nil }
        let offset = offsetTimeOriginal.flatMap(ExifFacts.parseOffset)
        // Read as UTC, then moved by the offset: what reading it in a fixed-offset zone gives.
        guard let utc = DateFormats.utcDate(String(text.prefix(19)), format: "yyyy:MM:dd HH:mm:ss") else {
            return nil
        }
        var date = utc - Double(offset ?? 0)
        if let fraction = subSecTimeOriginal, let digits = Double("0." + fraction.filter(\.isNumber)) {
            date += digits
        }
        return (date, offset)
    }

    /// "+02:00" / "-04:00" in seconds.
    static func parseOffset(_ text: String) -> Int? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard trimmed.count == 6, let sign = trimmed.first, sign == "+" || sign == "-" else { return nil }
        let parts = trimmed.dropFirst().split(separator: ":")
        guard parts.count == 2, let hours = Int(parts[0]), let minutes = Int(parts[1]), hours <= 14, minutes < 60 else {
            return nil
        }
        return (sign == "-" ? -1 : 1) * (hours * 3600 + minutes * 60)
    }
}

/// Apple's MakerNote (`Apple iOS\0`, version, `MM`, then an IFD whose offsets count from the
/// MakerNote's start).
struct AppleMakerNote: Sendable, Equatable {
    /// Tag 0x0011 (exiftool: MediaGroupUUID / ContentIdentifier).
    var contentIdentifier: String?
    /// Tag 0x000A (3 = HDR image, 4 = the original of one).
    var hdrImageType: Int?
    /// Tag 0x000B.
    var burstUUID: String?
}

enum ExifParser {
    /// Longest identifier kept: a UUID is 36 characters; anything past 256 is not an identifier.
    static let maxIdentifierLength = 256

    /// Parses the TIFF structure in `bytes` (starting with `II`/`MM`). Never throws: a part that
    /// cannot be read is left out and named in `warnings`.
    static func parse(_ bytes: [UInt8]) -> ExifFacts {
        var facts = ExifFacts()
        let reader: TIFFReader
        do {
            reader = try TIFFReader(bytes)
        } catch {
            facts.warnings.append("Exif: \(error.message)")
            return facts
        }
        var exifIFD: Int?
        var gpsIFD: Int?
        do {
            let first = try reader.firstIFDOffset()
            let ifd0 = try reader.directory(at: first)
            for entry in ifd0.entries {
                switch entry.tag {
                case 0x0112: facts.orientation = reader.integers(entry).first.map(Int.init)
                case 0x010F: facts.make = reader.string(entry)
                case 0x0110: facts.model = reader.string(entry)
                case 0x8769: exifIFD = reader.integers(entry).first.map(Int.init)
                case 0x8825: gpsIFD = reader.integers(entry).first.map(Int.init)
                default: break
                }
            }
        } catch {
            facts.warnings.append("Exif IFD0: \(error.message)")
            return facts
        }
        if let exifIFD, exifIFD != 0 {
            do {
                for entry in try reader.directory(at: exifIFD).entries {
                    switch entry.tag {
                    case 0x9003: facts.dateTimeOriginal = reader.string(entry)
                    case 0x9011: facts.offsetTimeOriginal = reader.string(entry)
                    case 0x9291: facts.subSecTimeOriginal = reader.string(entry)
                    case 0xA002: facts.pixelXDimension = reader.integers(entry).first.map(Int.init)
                    case 0xA003: facts.pixelYDimension = reader.integers(entry).first.map(Int.init)
                    case 0x927C:
                        if let note = reader.valueBytes(entry) {
                            do {
                                facts.apple = try parseAppleMakerNote(note)
                            } catch {
                                facts.warnings.append("MakerNote: \(error.message)")
                            }
                        } else if entry.count > 0 {
                            facts.warnings.append("MakerNote: its \(entry.count) bytes lie outside the Exif block")
                        }
                    default: break
                    }
                }
            } catch {
                facts.warnings.append("Exif IFD: \(error.message)")
            }
        }
        if let gpsIFD, gpsIFD != 0 {
            do {
                try parseGPS(reader, at: gpsIFD, into: &facts)
            } catch {
                facts.warnings.append("GPS IFD: \(error.message)")
            }
        }
        return facts
    }

    static func parseGPS(_ reader: TIFFReader, at offset: Int, into facts: inout ExifFacts) throws(BoxError) {
        var latitudeRef = "N"
        var longitudeRef = "E"
        var latitude: [Double?] = []
        var longitude: [Double?] = []
        var altitudeRef: Int64 = 0
        var altitude: Double?
        for entry in try reader.directory(at: offset).entries {
            switch entry.tag {
            case 0x0001: latitudeRef = reader.string(entry) ?? "N"
            case 0x0002: latitude = reader.rationals(entry)
            case 0x0003: longitudeRef = reader.string(entry) ?? "E"
            case 0x0004: longitude = reader.rationals(entry)
            case 0x0005: altitudeRef = reader.integers(entry).first ?? 0
            case 0x0006: altitude = reader.rationals(entry).first ?? nil
            default: break
            }
        }
        func degrees(_ parts: [Double?]) -> Double? {
            guard parts.count == 3, let d = parts[0], let m = parts[1], let s = parts[2] else { return nil }
            let value = d + m / 60 + s / 3600
            return value.isFinite ? value : nil
        }
        if let lat = degrees(latitude), let lon = degrees(longitude), abs(lat) <= 90, abs(lon) <= 180 {
            facts.latitude = latitudeRef.uppercased().hasPrefix("S") ? -lat : lat
            facts.longitude = longitudeRef.uppercased().hasPrefix("W") ? -lon : lon
            if let altitude, altitude.isFinite { facts.altitude = altitudeRef == 1 ? -altitude : altitude }
        }
    }

    /// Apple's MakerNote: `Apple iOS\0`, two version bytes, `MM`, then an IFD at byte 14 whose value
    /// offsets count from the MakerNote's first byte. Any other MakerNote gives nil.
    static func parseAppleMakerNote(_ note: [UInt8]) throws(BoxError) -> AppleMakerNote? {
        let signature: [UInt8] = Array("Apple iOS".utf8) + [0]
        guard note.count >= 16, Array(note[0..<10]) == signature else { return nil }
        let littleEndian: Bool
        switch (note[12], note[13]) {
        case (0x4D, 0x4D): littleEndian = false
        case (0x49, 0x49): littleEndian = true
        default: throw BoxError(.malformed, at: 12, "Apple MakerNote without a byte order")
        }
        let reader = TIFFReader(note, littleEndian: littleEndian, origin: 0)
        var result = AppleMakerNote()
        for entry in try reader.directory(at: 14).entries {
            switch entry.tag {
            case 0x0011:
                if let text = reader.string(entry), text.utf8.count <= maxIdentifierLength {
                    result.contentIdentifier = text
                }
            case 0x000A: result.hdrImageType = reader.integers(entry).first.map(Int.init)
            case 0x000B:
                if let text = reader.string(entry), text.utf8.count <= maxIdentifierLength { result.burstUUID = text }
            default: break
            }
        }
        return result
    }
}
