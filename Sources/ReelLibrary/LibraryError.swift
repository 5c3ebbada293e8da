/// A library failure: what kind, and one line naming the cause.
public struct LibraryError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Kinds, open to growth.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        let name: String
        public var description: String { name }
        /// A predicate, sort key, option or argument PhotoKit would not accept.
        public static let invalidArgument = Code(name: "invalid-argument")
        /// No asset, resource or album by that identifier.
        public static let notFound = Code(name: "not-found")
        /// A change token from another library, or malformed.
        public static let invalidToken = Code(name: "invalid-token")
        /// The file behind a resource changed or vanished since it was indexed.
        public static let stale = Code(name: "stale")
        /// The store could not be opened, read or written.
        public static let storeFailed = Code(name: "store-failed")
        /// A resource could not be written out.
        public static let writeFailed = Code(name: "write-failed")
        /// Another scan holds the library.
        public static let busy = Code(name: "busy")
        /// A still and a movie that cannot be imported as one Live Photo (`import --live`): a movie
        /// over a Live Photo's 5 s, or a file already in another Live Photo.
        public static let cannotPair = Code(name: "cannot-pair")

        /// Every code, in the order they are documented.
        public static let allCases: [Code] = [
            invalidArgument, notFound, invalidToken, stale, storeFailed, writeFailed, busy, cannotPair,
        ]
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
