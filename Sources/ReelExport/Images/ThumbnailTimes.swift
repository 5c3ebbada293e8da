import Foundation

/// When to take thumbnails, as a person writes it: instants (`12.5`, `00:01:02.500`, `50%`), a count
/// spread evenly over the asset, or an interval. Resolved against the asset's duration into seconds.
public enum ThumbnailTimes: Sendable, Equatable {
    /// One instant.
    public enum Instant: Sendable, Equatable {
        case seconds(Double)
        /// A percentage of the duration (0...100).
        case percent(Double)
        /// `still`: the moment a Live or Motion Photo's still was taken, for the asset's video as the
        /// library resolves it (`LibrarySource.stillImageTime`).
        case still
    }
    /// These instants.
    case at([Instant])
    /// `n` pictures, at the starts of `n` equal parts of the asset (0, d/n, 2d/n, …): each picture
    /// stands for the part that follows it, as a scrubbing track's cues do.
    case count(Int)
    /// One picture every so many seconds, from 0 while before the end.
    case every(Double)

    /// Whether `still` is among the instants: such a request is taken exactly (the frame shown at
    /// each time, not the nearest keyframe), since the point is the picture the photo shows.
    public var namesStill: Bool {
        if case .at(let instants) = self { return instants.contains(.still) }
        return false
    }

    /// Reads one instant: seconds (`12.5`, `12.5s`), a timecode `[hh:]mm:ss[.fff]`, a percentage
    /// (`50%`) or `still`. Throws `invalid-argument` naming the text.
    public static func instant(_ text: String) throws(ExportError) -> Instant {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.lowercased() == "still" { return .still }
        if trimmed.hasSuffix("%") {
            guard let value = Double(trimmed.dropLast()), value >= 0, value <= 100 else {
                throw ExportError(.invalidArgument, "cannot read the percentage '\(text)'; write 0% to 100%")
            }
            return .percent(value)
        }
        guard let value = seconds(trimmed) else {
            throw ExportError(
                .invalidArgument,
                "cannot read the time '\(text)'; write seconds (12.5), hh:mm:ss.fff, a percentage (50%) or still")
        }
        return .seconds(value)
    }

    /// Reads an interval: seconds with an optional unit (`10`, `10s`, `500ms`, `2m`) or a timecode.
    /// Throws `invalid-argument` for text it cannot read or an interval of 0.
    public static func interval(_ text: String) throws(ExportError) -> Double {
        let trimmed = text.trimmingCharacters(in: .whitespaces).lowercased()
        var value: Double?
        if trimmed.hasSuffix("ms") {
            value = Double(trimmed.dropLast(2)).map { $0 / 1000 }
        } else if trimmed.hasSuffix("m"), let minutes = Double(trimmed.dropLast()) {
            value = minutes * 60
        } else {
            value = seconds(trimmed)
        }
        guard let value, value.isFinite, value > 0 else {
            throw ExportError(.invalidArgument, "cannot read the interval '\(text)'; write e.g. 10s, 500ms or 2m")
        }
        return value
    }

    /// The times in seconds for an asset lasting `duration` whose still (a Live or Motion Photo's)
    /// was taken at `still` seconds, ascending as given (`at` keeps its order). Throws
    /// `invalid-argument` for an instant outside 0...duration, naming it and the duration, `still`
    /// for an asset without one, or a count below 1.
    public func seconds(duration: Double, still: Double? = nil) throws(ExportError) -> [Double] {
        switch self {
        case .at(let instants):
            var result: [Double] = []
            for instant in instants {
                switch instant {
                case .percent(let percent): result.append(duration * percent / 100)
                case .still:
                    guard let still else {
                        throw ExportError(
                            .invalidArgument,
                            "the time 'still' needs a Live or Motion Photo's video from the library (library:<id>), whose still's moment it knows"
                        )
                    }
                    // A still stamped past the movie's last frame (rounding) is shown at the end.
                    result.append(min(max(0, still), duration))
                case .seconds(let value):
                    guard value <= duration + 1e-6 else {
                        throw ExportError(
                            .invalidArgument,
                            "the time \(Self.format(value)) is past the end of the asset, which lasts \(Self.format(duration))"
                        )
                    }
                    result.append(min(value, duration))
                }
            }
            return result
        case .count(let count):
            guard count >= 1 else { throw ExportError(.invalidArgument, "the count must be at least 1, not \(count)") }
            return (0..<count).map { duration * Double($0) / Double(count) }
        case .every(let interval):
            guard interval > 0 else { throw ExportError(.invalidArgument, "the interval must be above 0") }
            // A picture every `interval` from 0, while before the end (at least one).
            let count = max(1, Int((duration / interval - 1e-9).rounded(.up)))
            return (0..<count).map { Double($0) * interval }
        }
    }

    /// `[hh:]mm:ss[.fff]` or seconds, with an optional `s`.
    static func seconds(_ text: String) -> Double? {
        let body = text.hasSuffix("s") ? String(text.dropLast()) : text
        guard !body.isEmpty, !body.hasPrefix("-"), let value = TimeRange.seconds(body), value.isFinite else {
            return nil
        }
        return value
    }

    static func format(_ value: Double) -> String {
        String(format: "%.3f s", value)
    }
}
