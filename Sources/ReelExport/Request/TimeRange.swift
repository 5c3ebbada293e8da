/// A part of the source, in seconds from its start.
public struct TimeRange: Sendable, Equatable, Codable, CustomStringConvertible {
    public var start: Double
    /// Nil means to the end.
    public var end: Double?
    public init(start: Double, end: Double?) {
        self.start = start
        self.end = end
    }
    /// Parses `a-b`, `a-`, where a and b are seconds (`12.5`) or `[hh:]mm:ss[.fff]`.
    public init?(parsing text: String) {
        guard let dash = text.firstIndex(of: "-", where: { $0 != text.startIndex }) else { return nil }
        guard let start = TimeRange.seconds(String(text[..<dash])) else { return nil }
        let rest = String(text[text.index(after: dash)...])
        let end = rest.isEmpty ? nil : TimeRange.seconds(rest)
        if !rest.isEmpty && end == nil { return nil }
        self.init(start: start, end: end)
    }
    static func seconds(_ text: String) -> Double? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard (1...3).contains(parts.count) else { return nil }
        var total = 0.0
        for part in parts {
            guard let value = Double(part), value >= 0, value.isFinite else { return nil }
            total = total * 60 + value
        }
        return total
    }
    public var description: String { "\(start)-\(end.map { String($0) } ?? "")" }

    /// The range as an asset lasting `duration` seconds can give it, as `AVAssetExportSession` clamps
    /// its `timeRange`: the end at most `duration`, and an open end made `duration`. Unchanged when the
    /// duration is unknown (0).
    public func clamped(to duration: Double) -> TimeRange {
        guard duration > 0 else { return self }
        return TimeRange(start: min(start, duration), end: min(end ?? duration, duration))
    }

    /// Seconds of an asset lasting `duration` that the range covers (the whole asset when the range
    /// is nil; never negative).
    public static func seconds(of range: TimeRange?, within duration: Double) -> Double {
        guard let range else { return max(0, duration) }
        let end = min(range.end ?? duration, duration > 0 ? duration : range.end ?? 0)
        return max(0, end - range.start)
    }
}

extension String {
    fileprivate func firstIndex(of character: Character, where accept: (Index) -> Bool) -> Index? {
        indices.first { self[$0] == character && accept($0) }
    }
}
