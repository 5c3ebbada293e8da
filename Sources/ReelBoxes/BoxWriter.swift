/// Builds ISO-BMFF boxes as bytes: a header (32-bit size, or 64-bit when the box is larger than
/// 4 GiB or when asked), then the payload.
public enum BoxWriter {
    /// A box of `type` around `payload`. `largeSize` forces the 16-byte header.
    public static func box(_ type: FourCC, _ payload: [UInt8], largeSize: Bool = false) -> [UInt8] {
        let total = UInt64(payload.count) + 8
        if largeSize || total > UInt64(UInt32.max) {
            return be32(1) + type.bytes + be64(total + 8) + payload
        }
        return be32(UInt32(total)) + type.bytes + payload
    }

    /// A box holding `children`, each already written.
    public static func container(_ type: FourCC, _ children: [[UInt8]], largeSize: Bool = false) -> [UInt8] {
        box(type, children.flatMap { $0 }, largeSize: largeSize)
    }

    /// A full box: version and flags, then `payload`.
    public static func fullBox(
        _ type: FourCC, version: UInt8 = 0, flags: UInt32 = 0, _ payload: [UInt8], largeSize: Bool = false
    ) -> [UInt8] {
        box(type, [version] + be24(flags) + payload, largeSize: largeSize)
    }

    public static func be16(_ value: UInt16) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xff)] }
    public static func be24(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 16 & 0xff), UInt8(value >> 8 & 0xff), UInt8(value & 0xff)]
    }
    public static func be32(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xff), UInt8(value >> 8 & 0xff), UInt8(value & 0xff)]
    }
    public static func be64(_ value: UInt64) -> [UInt8] {
        be32(UInt32(value >> 32)) + be32(UInt32(value & 0xffff_ffff))
    }
}
