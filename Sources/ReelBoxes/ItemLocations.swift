/// Where a HEIF item's data lies (ISO/IEC 14496-12 `iloc`): its construction method (0 in the file,
/// 1 in the `idat` box), a base offset and extents relative to it. A length of 0 means "to the end".
public struct ItemLocation: Sendable, Equatable {
    public var constructionMethod: Int
    public var baseOffset: UInt64
    public var extents: [Extent]

    public struct Extent: Sendable, Equatable {
        public var offset: UInt64
        public var length: UInt64
    }
}

extension BoxReader {
    /// Most items an `iloc` may list, and extents one item may have: far above any phone's HEIC (a
    /// 48 MP grid has a few hundred items), low enough that a hostile count costs nothing.
    public static let maxItemLocations = 10_000
    public static let maxItemExtents = 1_000

    /// The item locations of the `iloc` box `box` (versions 0 to 2), by item id. Every field is read
    /// through a bounds-checked cursor (at most 4 MiB of the box); counts over the limits above throw
    /// `limitExceeded`, another version `malformed`. The offsets are not checked against the file here:
    /// the caller knows what they are relative to.
    public func itemLocations(of box: Box) throws(BoxError) -> [UInt32: ItemLocation] {
        var cursor = try cursor(of: box, limit: 4 << 20)
        let version = try cursor.u8()
        try cursor.skip(3)
        guard version <= 2 else { throw BoxError(.malformed, at: box.offset, "iloc version \(version)") }
        let sizes = try cursor.u16()
        let offsetSize = Int(sizes >> 12)
        let lengthSize = Int(sizes >> 8 & 0xf)
        let baseOffsetSize = Int(sizes >> 4 & 0xf)
        let indexSize = version >= 1 ? Int(sizes & 0xf) : 0
        let count = version < 2 ? Int(try cursor.u16()) : Int(try cursor.u32())
        guard count <= Self.maxItemLocations else {
            throw BoxError(.limitExceeded, at: box.offset, "iloc declares \(count) items")
        }
        var result: [UInt32: ItemLocation] = [:]
        for _ in 0..<count {
            let id = version < 2 ? UInt32(try cursor.u16()) : try cursor.u32()
            var method = 0
            if version >= 1 { method = Int(try cursor.u16() & 0xf) }
            try cursor.skip(2)  // data reference index
            let base = try cursor.unsigned(size: baseOffsetSize)
            let extentCount = Int(try cursor.u16())
            guard extentCount <= Self.maxItemExtents else {
                throw BoxError(.limitExceeded, at: box.offset, "item \(id) declares \(extentCount) extents")
            }
            var extents: [ItemLocation.Extent] = []
            for _ in 0..<extentCount {
                if indexSize > 0 { _ = try cursor.unsigned(size: indexSize) }
                let offset = try cursor.unsigned(size: offsetSize)
                let length = try cursor.unsigned(size: lengthSize)
                extents.append(ItemLocation.Extent(offset: offset, length: length))
            }
            result[id] = ItemLocation(constructionMethod: method, baseOffset: base, extents: extents)
        }
        return result
    }
}
