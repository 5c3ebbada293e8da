import Foundation

/// The XMP properties Reel reads, by namespace: Google's Camera (Motion Photo, Micro Video),
/// Container directory items, and capture dates.
struct XMPFacts: Sendable, Equatable {
    struct Item: Sendable, Equatable {
        var mime: String?
        var semantic: String?
        var length: Int64?
        var padding: Int64?
    }
    /// Properties by (namespace URI, local name); the first value seen wins.
    var properties: [String: String] = [:]
    var items: [Item] = []

    static let camera = "http://ns.google.com/photos/1.0/camera/"
    static let container = "http://ns.google.com/photos/1.0/container/"
    static let item = "http://ns.google.com/photos/1.0/container/item/"
    static let xmp = "http://ns.adobe.com/xap/1.0/"
    static let photoshop = "http://ns.adobe.com/photoshop/1.0/"
    static let exif = "http://ns.adobe.com/exif/1.0/"

    func value(_ namespace: String, _ name: String) -> String? { properties[namespace + name] }
    func integer(_ namespace: String, _ name: String) -> Int64? {
        value(namespace, name).flatMap { Int64($0.trimmingCharacters(in: .whitespaces)) }
    }
}

/// A small, tolerant XMP reader: it walks tags and attributes without building a tree, maps prefixes
/// to namespaces from every `xmlns:` declaration, and keeps attribute values and the text of leaf
/// elements. Linear in its input; never recursive; malformed markup ends the walk with what was read.
enum XMPParser {
    static func parse(_ bytes: [UInt8]) -> XMPFacts {
        var facts = XMPFacts()
        var namespaces: [String: String] = [:]
        // First pass: namespace declarations, wherever they are (prefixes are declared before use in
        // real files, but a tolerant reader does not depend on it).
        var tags:
            [(name: String, attributes: [(String, String)], closing: Bool, selfClosing: Bool, textAfter: String)] = []
        var index = 0
        let count = bytes.count
        while index < count {
            guard bytes[index] == 0x3C else {
                index += 1
                continue
            }
            // Comments, processing instructions and declarations are skipped whole.
            if index + 1 < count, bytes[index + 1] == 0x21 || bytes[index + 1] == 0x3F {
                guard let end = find(0x3E, in: bytes, from: index + 1) else { break }
                index = end + 1
                continue
            }
            guard let end = findTagEnd(bytes, from: index + 1) else { break }
            var body = Array(bytes[(index + 1)..<end])
            var closing = false
            var selfClosing = false
            if body.first == 0x2F {
                closing = true
                body.removeFirst()
            }
            if body.last == 0x2F {
                selfClosing = true
                body.removeLast()
            }
            let (name, attributes) = splitTag(body)
            for (key, value) in attributes where key.hasPrefix("xmlns:") {
                namespaces[String(key.dropFirst(6))] = value
            }
            let textEnd = find(0x3C, in: bytes, from: end + 1) ?? count
            let text = String(decoding: bytes[(end + 1)..<textEnd], as: UTF8.self)
            tags.append((name, attributes, closing, selfClosing, text))
            index = end + 1
        }
        func resolve(_ qualified: String) -> String? {
            guard let colon = qualified.firstIndex(of: ":") else { return nil }
            guard let uri = namespaces[String(qualified[..<colon])] else { return nil }
            return uri + qualified[qualified.index(after: colon)...]
        }
        var currentItem: XMPFacts.Item?
        for (position, tag) in tags.enumerated() {
            guard let resolved = resolve(tag.name) else { continue }
            if tag.closing {
                if resolved == XMPFacts.container + "Item", let item = currentItem {
                    facts.items.append(item)
                    currentItem = nil
                }
                continue
            }
            if resolved == XMPFacts.container + "Item" {
                if let item = currentItem { facts.items.append(item) }
                currentItem = XMPFacts.Item()
                for (key, value) in tag.attributes {
                    if let name = resolve(key) { assign(name, decode(value), to: &currentItem) }
                }
                if tag.selfClosing, let item = currentItem {
                    facts.items.append(item)
                    currentItem = nil
                }
                continue
            }
            for (key, value) in tag.attributes where !key.hasPrefix("xmlns") {
                if let name = resolve(key), facts.properties[name] == nil { facts.properties[name] = decode(value) }
            }
            // A leaf element: its text runs to the next tag, which closes it.
            if !tag.selfClosing, position + 1 < tags.count, tags[position + 1].closing,
                tags[position + 1].name == tag.name
            {
                let value = decode(tag.textAfter.trimmingCharacters(in: .whitespacesAndNewlines))
                if resolved.hasPrefix(XMPFacts.item), currentItem != nil {
                    assign(resolved, value, to: &currentItem)
                } else if facts.properties[resolved] == nil {
                    facts.properties[resolved] = value
                }
            }
        }
        if let item = currentItem { facts.items.append(item) }
        return facts
    }

    private static func assign(_ name: String, _ value: String, to item: inout XMPFacts.Item?) {
        switch name {
        case XMPFacts.item + "Mime": item?.mime = value
        case XMPFacts.item + "Semantic": item?.semantic = value
        case XMPFacts.item + "Length": item?.length = Int64(value.trimmingCharacters(in: .whitespaces))
        case XMPFacts.item + "Padding": item?.padding = Int64(value.trimmingCharacters(in: .whitespaces))
        default: break
        }
    }

    private static func find(_ byte: UInt8, in bytes: [UInt8], from start: Int) -> Int? {
        var index = start
        while index < bytes.count {
            if bytes[index] == byte { return index }
            index += 1
        }
        return nil
    }

    /// The `>` that ends a tag, skipping any inside quoted attribute values.
    private static func findTagEnd(_ bytes: [UInt8], from start: Int) -> Int? {
        var quote: UInt8?
        var index = start
        while index < bytes.count {
            let byte = bytes[index]
            if let open = quote {
                if byte == open { quote = nil }
            } else if byte == 0x22 || byte == 0x27 {
                quote = byte
            } else if byte == 0x3E {
                return index
            }
            index += 1
        }
        return nil
    }

    private static func splitTag(_ body: [UInt8]) -> (String, [(String, String)]) {
        let text = String(decoding: body, as: UTF8.self)
        var scalars = Substring(text)
        func skipSpace() { scalars = scalars.drop { $0 == " " || $0 == "\n" || $0 == "\r" || $0 == "\t" } }
        skipSpace()
        let name = String(scalars.prefix { !($0 == " " || $0 == "\n" || $0 == "\r" || $0 == "\t") })
        scalars = scalars.dropFirst(name.count)
        var attributes: [(String, String)] = []
        while true {
            skipSpace()
            guard let equals = scalars.firstIndex(of: "=") else { break }
            let key = scalars[..<equals].trimmingCharacters(in: .whitespacesAndNewlines)
            scalars = scalars[scalars.index(after: equals)...]
            skipSpace()
            guard let quote = scalars.first, quote == "\"" || quote == "'" else { break }
            scalars = scalars.dropFirst()
            guard let close = scalars.firstIndex(of: quote) else { break }
            attributes.append((key, String(scalars[..<close])))
            scalars = scalars[scalars.index(after: close)...]
        }
        return (name, attributes)
    }

    /// XML's five entities and numeric references.
    static func decode(_ text: String) -> String {
        guard text.contains("&") else { return text }
        var result = ""
        var rest = Substring(text)
        while let amp = rest.firstIndex(of: "&") {
            result += rest[..<amp]
            rest = rest[amp...]
            guard let semicolon = rest.prefix(12).firstIndex(of: ";") else {
                result += "&"
                rest = rest.dropFirst()
                continue
            }
            let entity = rest[rest.index(after: rest.startIndex)..<semicolon]
            switch entity {
            case "amp": result += "&"
            case "lt": result += "<"
            case "gt": result += ">"
            case "quot": result += "\""
            case "apos": result += "'"
            default:
                if entity.hasPrefix("#x"), let code = UInt32(entity.dropFirst(2), radix: 16),
                    let scalar = UnicodeScalar(code)
                {
                    result.unicodeScalars.append(scalar)
                } else if entity.hasPrefix("#"), let code = UInt32(entity.dropFirst()), let scalar = UnicodeScalar(code)
                {
                    result.unicodeScalars.append(scalar)
                } else {
                    result += rest[...semicolon]
                }
            }
            rest = rest[rest.index(after: semicolon)...]
        }
        return result + rest
    }
}
