import Foundation

/// The description an ICC profile gives itself (its `desc` tag): v2's `desc` text or v4's first `mluc`
/// record. Bounds-checked; nil when the profile says nothing readable.
enum ICCProfile {
    static func description(_ profile: [UInt8]) -> String? {
        func u32(_ at: Int) -> Int? {
            guard at >= 0, at + 4 <= profile.count else { return nil }
            return profile[at..<at + 4].reduce(0) { $0 << 8 | Int($1) }
        }
        guard let count = u32(128), count < 1000 else { return nil }
        for index in 0..<count {
            let entry = 132 + index * 12
            guard let signature = u32(entry), let offset = u32(entry + 4), let size = u32(entry + 8) else { return nil }
            guard signature == 0x6465_7363, offset + size <= profile.count, size >= 12 else { continue }  // "desc"
            let tag = Array(profile[offset..<offset + size])
            let type = tag[0..<4].reduce(0) { $0 << 8 | Int($1) }
            if type == 0x6465_7363 {  // "desc": ASCII count, then the text
                let length = tag[8..<12].reduce(0) { $0 << 8 | Int($1) }
                guard length > 0, 12 + length <= tag.count else { return nil }
                return clean(String(decoding: tag[12..<12 + length].prefix { $0 != 0 }, as: UTF8.self))
            }
            if type == 0x6D6C_7563, tag.count >= 28 {  // "mluc": the first record's UTF-16BE text
                let length = tag[20..<24].reduce(0) { $0 << 8 | Int($1) }
                let start = tag[24..<28].reduce(0) { $0 << 8 | Int($1) }
                guard length > 0, start + length <= tag.count else { return nil }
                var units: [UInt16] = []
                var at = start
                while at + 1 < start + length {
                    units.append(UInt16(tag[at]) << 8 | UInt16(tag[at + 1]))
                    at += 2
                }
                return clean(String(decoding: units, as: UTF16.self))
            }
        }
        return nil
    }

    private static func clean(_ text: String) -> String? {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines.union(.controlCharacters))
        return trimmed.isEmpty ? nil : trimmed
    }
}
