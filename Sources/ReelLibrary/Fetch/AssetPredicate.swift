import Foundation

/// The keys `PHFetchOptions` accepts for assets in a predicate or a sort descriptor, and no others.
/// `SELF` stands for the asset (its identifier); `favorite` and `hidden` are PhotoKit's spellings of
/// `isFavorite` and `isHidden`. Each key's column, and so the literal it compares with, is its entry
/// in `AssetColumns`.
public enum FetchKey: String, Sendable, CaseIterable, Codable {
    case localIdentifier, creationDate, modificationDate, mediaType, mediaSubtypes, duration
    case pixelWidth, pixelHeight, isFavorite, isHidden, burstIdentifier, hasAdjustments

    /// PhotoKit's other names for a key: `SELF` for the asset, `favorite` and `hidden`.
    package var aliases: [String] {
        switch self {
        case .localIdentifier: ["SELF"]
        case .isFavorite: ["favorite"]
        case .isHidden: ["hidden"]
        default: []
        }
    }

    /// Every name PhotoKit allows, as written in predicates (each key's aliases, then its own name).
    public static let allowedNames = allCases.flatMap { $0.aliases + [$0.rawValue] }

    /// The key a predicate name stands for; nil for a name PhotoKit refuses.
    public init?(name: String) {
        guard let key = FetchKey(rawValue: name) ?? FetchKey.allCases.first(where: { $0.aliases.contains(name) })
        else { return nil }
        self = key
    }

    /// Whether values of this key are dates.
    public var isDate: Bool { AssetColumns.column(for: self).type == .date }
}

/// A literal in a predicate.
public enum FetchValue: Sendable, Equatable, Codable {
    case integer(Int64)
    case real(Double)
    case string(String)
    case date(Date)
    case bool(Bool)
    case null
}

/// A comparison operator of NSPredicate's format.
public enum ComparisonOperator: String, Sendable, Codable {
    case equal = "=="
    case notEqual = "!="
    case less = "<"
    case lessOrEqual = "<="
    case greater = ">"
    case greaterOrEqual = ">="
}

/// The left side of a comparison: a key, or a key masked with `&` (`mediaSubtypes & 8`).
public enum FetchOperand: Sendable, Equatable, Codable {
    case key(FetchKey)
    case bitAnd(FetchKey, UInt64)

    public var key: FetchKey {
        switch self {
        case .key(let key), .bitAnd(let key, _): key
        }
    }
}

/// A parsed fetch predicate over `FetchKey`s: what `PredicateParser` makes of PhotoKit's format
/// strings, and what each store turns into its own SQL with bound parameters.
public indirect enum AssetPredicate: Sendable, Equatable, Codable {
    case and([AssetPredicate])
    case or([AssetPredicate])
    case not(AssetPredicate)
    case compare(FetchOperand, ComparisonOperator, FetchValue)
    /// `key IN {a, b}`.
    case isIn(FetchKey, [FetchValue])
    /// `key BETWEEN {low, high}` (both ends included).
    case between(FetchKey, FetchValue, FetchValue)
    case constant(Bool)
}

/// A sort key and direction (`NSSortDescriptor`).
public struct FetchSort: Sendable, Equatable, Codable {
    public var key: FetchKey
    public var ascending: Bool
    public init(key: FetchKey, ascending: Bool) {
        self.key = key
        self.ascending = ascending
    }

    /// Parses `key` or `key,desc` / `key,asc` (the CLI's `--sort`). Throws for keys PhotoKit
    /// does not sort by.
    public static func parse(_ text: String) throws(LibraryError) -> FetchSort {
        let parts = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        guard let name = parts.first, let key = FetchKey(name: name) else {
            throw LibraryError(
                .invalidArgument,
                "'\(parts.first ?? text)' is not a key PhotoKit sorts assets by (allowed: \(FetchKey.allowedNames.joined(separator: ", ")))"
            )
        }
        switch parts.count > 1 ? parts[1].lowercased() : "asc" {
        case "asc", "ascending": return FetchSort(key: key, ascending: true)
        case "desc", "descending": return FetchSort(key: key, ascending: false)
        default: throw LibraryError(.invalidArgument, "sort direction '\(parts[1])' is neither asc nor desc")
        }
    }
}

/// Which assets a fetch starts from (`fetchAssets(in:options:)`).
public enum AssetScope: Sendable, Equatable, Codable {
    /// The whole library.
    case library
    /// A user album's members.
    case userAlbum(String)
    /// The assets whose primary file is directly in this folder.
    case folder(String)
    /// These identifiers only (`fetchAssets(withLocalIdentifiers:)`, moments).
    case identifiers([String])
}

/// Everything a fetch asks for (`PHFetchOptions`), store-agnostic.
public struct AssetQuery: Sendable, Equatable, Codable {
    public var scope: AssetScope
    public var predicate: AssetPredicate?
    public var sort: [FetchSort]
    /// 0 = no limit.
    public var limit: Int
    /// PhotoKit's default: hidden assets are left out.
    public var includeHiddenAssets: Bool
    /// PhotoKit's default: one representative per burst.
    public var includeAllBurstAssets: Bool
    /// Only assets added at or after this date (smart album "Recently Added").
    public var addedSince: Date?
    /// Only assets of this playback style (smart album "Animated"). Not a PhotoKit predicate key:
    /// smart albums use it, predicates cannot.
    public var playbackStyle: PlaybackStyle?

    public init(
        scope: AssetScope = .library, predicate: AssetPredicate? = nil, sort: [FetchSort] = [], limit: Int = 0,
        includeHiddenAssets: Bool = false, includeAllBurstAssets: Bool = false, addedSince: Date? = nil,
        playbackStyle: PlaybackStyle? = nil
    ) {
        self.scope = scope
        self.predicate = predicate
        self.sort = sort
        self.limit = limit
        self.includeHiddenAssets = includeHiddenAssets
        self.includeAllBurstAssets = includeAllBurstAssets
        self.addedSince = addedSince
        self.playbackStyle = playbackStyle
    }
}
