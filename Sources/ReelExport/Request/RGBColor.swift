/// An opaque colour, 8 bits per channel: what transparent pixels (animated GIF, APNG) are flattened
/// onto. Written `#rrggbb`.
public struct RGBColor: Sendable, Equatable, Codable, CustomStringConvertible {
    public var red: UInt8
    public var green: UInt8
    public var blue: UInt8

    public init(red: UInt8, green: UInt8, blue: UInt8) {
        self.red = red
        self.green = green
        self.blue = blue
    }

    public static let black = RGBColor(red: 0, green: 0, blue: 0)
    public static let white = RGBColor(red: 255, green: 255, blue: 255)

    /// Reads `#rrggbb`, `rrggbb`, `0xrrggbb`, `black` or `white`.
    public init?(parsing text: String) {
        let lowered = text.lowercased()
        if lowered == "black" {
            self = .black
            return
        }
        if lowered == "white" {
            self = .white
            return
        }
        var digits = Substring(lowered)
        if digits.hasPrefix("#") {
            digits = digits.dropFirst()
        } else if digits.hasPrefix("0x") {
            digits = digits.dropFirst(2)
        }
        guard digits.count == 6, digits.allSatisfy(\.isHexDigit), let value = UInt32(digits, radix: 16) else {
            return nil
        }
        self.init(red: UInt8(value >> 16), green: UInt8((value >> 8) & 0xFF), blue: UInt8(value & 0xFF))
    }

    /// What `reel export`, `reel submit` and a manifest say of `text` when it is not a colour.
    public static func unreadable(_ text: String) -> String {
        "cannot read the colour '\(text)'; write #rrggbb, black or white"
    }

    /// 0xRRGGBB.
    var packed: UInt32 { UInt32(red) << 16 | UInt32(green) << 8 | UInt32(blue) }

    /// `#rrggbb`.
    public var description: String {
        "#" + [red, green, blue].map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let color = RGBColor(parsing: text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a colour"))
        }
        self = color
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
