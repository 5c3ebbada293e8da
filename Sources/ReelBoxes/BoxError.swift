/// Why a box, or bytes inside one, could not be read: what was wrong and where.
public struct BoxError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of problem it is.
    public enum Kind: String, Sendable, Equatable {
        /// A size, offset or count points outside the range that holds it (a cut or a lying file).
        case outOfBounds = "out-of-bounds"
        /// A field holds a value the format does not allow (a size smaller than its header).
        case malformed
        /// More boxes, entries or nesting than the reader accepts.
        case limitExceeded = "limit-exceeded"
        /// The underlying file could not be read.
        case readFailed = "read-failed"
    }

    public let kind: Kind
    /// File offset where the problem sits.
    public let offset: Int64
    /// One line naming the cause.
    public let message: String

    public init(_ kind: Kind, at offset: Int64, _ message: String) {
        self.kind = kind
        self.offset = offset
        self.message = message
    }

    public var description: String { "\(message) (at byte \(offset))" }
}
