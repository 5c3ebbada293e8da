/// Why a photo could not be read or rendered, in one line: libvips's (and libheif's) message, joined
/// into one line, with a code of its own.
public struct PhotoError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A stable, machine-readable reason.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        private init(_ rawValue: String) { self.rawValue = rawValue }
        /// Missing, not a photo libvips reads, truncated or damaged.
        public static let unreadable = Code("unreadable")
        /// Larger than the pixels allowed.
        public static let limitExceeded = Code("limit-exceeded")
        /// The picture was decoded but could not be encoded in the format asked for.
        public static let encodeFailed = Code("encode-failed")
        /// A render option out of range (a crop outside the picture).
        public static let invalidArgument = Code("invalid-argument")
        /// A rendered picture could not be written where it belongs (a cache folder that is full or
        /// read-only).
        public static let writeFailed = Code("write-failed")
        /// libvips could not start (its modules or GLib's type system).
        public static let unavailable = Code("unavailable")
        public var description: String { rawValue }
    }

    public let code: Code
    /// One line naming the file and the cause.
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
