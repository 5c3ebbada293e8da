import Foundation

/// A collection of assets (`PHAssetCollection`): a user album, a scanned folder shown as an album,
/// a smart album computed from the assets' fields, or a moment (assets of one day and place).
public struct AssetCollection: Sendable, Codable, Equatable {
    /// `album:<UUID>`, `folder:<path>`, `smart:<subtype name>` or `moment:<day>:<place>`.
    public var localIdentifier: String
    public var localizedTitle: String
    public var assetCollectionType: AssetCollectionType
    /// PhotoKit's subtype; nil for a moment (PhotoKit's moments have none Reel can name).
    public var assetCollectionSubtype: AssetCollectionSubtype?
    /// How many assets `fetchAssets(in:)` returns with default options.
    public var estimatedAssetCount: Int
    /// A moment's first and last capture times.
    public var startDate: Date?
    public var endDate: Date?

    public init(
        localIdentifier: String, localizedTitle: String, assetCollectionType: AssetCollectionType,
        assetCollectionSubtype: AssetCollectionSubtype?, estimatedAssetCount: Int, startDate: Date? = nil,
        endDate: Date? = nil
    ) {
        self.localIdentifier = localIdentifier
        self.localizedTitle = localizedTitle
        self.assetCollectionType = assetCollectionType
        self.assetCollectionSubtype = assetCollectionSubtype
        self.estimatedAssetCount = estimatedAssetCount
        self.startDate = startDate
        self.endDate = endDate
    }
}

/// What a fetch asks for, as `PHFetchOptions` has it.
public struct FetchOptions: Sendable, Equatable {
    public var predicate: AssetPredicate?
    public var sortDescriptors: [FetchSort]
    /// 0 = no limit.
    public var fetchLimit: Int
    public var includeHiddenAssets: Bool
    public var includeAllBurstAssets: Bool

    public init(
        predicate: AssetPredicate? = nil, sortDescriptors: [FetchSort] = [], fetchLimit: Int = 0,
        includeHiddenAssets: Bool = false, includeAllBurstAssets: Bool = false
    ) {
        self.predicate = predicate
        self.sortDescriptors = sortDescriptors
        self.fetchLimit = fetchLimit
        self.includeHiddenAssets = includeHiddenAssets
        self.includeAllBurstAssets = includeAllBurstAssets
    }

    /// Options with a predicate in NSPredicate's format (`PredicateParser`). Throws `LibraryError`
    /// for a key PhotoKit does not allow, naming it.
    public init(predicate format: String, sortDescriptors: [FetchSort] = [], fetchLimit: Int = 0) throws(LibraryError) {
        self.init(
            predicate: try PredicateParser.parse(format), sortDescriptors: sortDescriptors, fetchLimit: fetchLimit)
    }

    func query(_ scope: AssetScope) -> AssetQuery {
        AssetQuery(
            scope: scope, predicate: predicate, sort: sortDescriptors, limit: max(0, fetchLimit),
            includeHiddenAssets: includeHiddenAssets, includeAllBurstAssets: includeAllBurstAssets)
    }
}
