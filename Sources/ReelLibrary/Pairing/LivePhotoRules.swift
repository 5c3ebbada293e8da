import Foundation

/// How a Live Photo's still and movie find each other from files alone (`LIVE-PHOTO-NOTES.md` §2):
///
/// - the still's MakerNote 0x0011 and the movie's `com.apple.quicktime.content.identifier` are equal,
///   compared case-insensitively; whichever side is scanned second links the pair;
/// - several candidates: the same folder first, then the same stem, then the nearest capture time;
/// - without identifiers: the same folder and stem (`IMG_1234.HEIC` ↔ `IMG_1234.MOV` or
///   `IMG_1234_HEVC.MOV`), a movie of at most 5 s, capture times within 5 s: an *inferred* pair;
///   never across folders by name alone, and never when both sides carry different identifiers.
public enum LivePhotoRules {
    /// Longest movie an inferred pair accepts, in seconds.
    public static let inferredMaxDuration = 5.0
    /// Longest movie `PhotoLibrary.importLivePhoto` pairs, in seconds: an iPhone's Live Photo movie
    /// lasts about 3 s (1.5 s either side of the still); 5 s is the inferred rule's bound, so nothing
    /// imported as a Live Photo is longer than a movie the scan itself would pair. PhotoKit documents
    /// no number, only that the movie is a Live Photo's short one; a longer clip is a video.
    public static let importedMaxDuration = inferredMaxDuration
    /// Largest gap between the two capture times of an inferred pair, in seconds.
    public static let inferredMaxGap = 5.0
    /// Most candidates a scan considers for one identifier: ten thousand files claiming one
    /// identifier cost each file a bounded query, not a quadratic search.
    public static let maxCandidates = 16

    /// The lowercased name without its extension and without a trailing `_HEVC`.
    public static func stem(of path: String) -> String {
        var stem = PathParts.stem(ofName: PathParts.name(of: path)).lowercased()
        if stem.hasSuffix("_hevc") { stem.removeLast(5) }
        return stem
    }

    static func folder(of path: String) -> String { PathParts.folder(of: path) }

    /// Whether two identifiers name the same pair.
    static func same(_ a: String?, _ b: String?) -> Bool {
        guard let a, let b else { return false }
        return a.caseInsensitiveCompare(b) == .orderedSame
    }

    /// What the inferred rule looks at on each side.
    struct Side {
        var path: String
        var date: Date?
        var contentIdentifier: String?
        var duration: Double?
    }

    /// Whether a photo and a movie may be paired by folder, name and time (no matching identifiers).
    static func inferable(photo: Side, video: Side) -> Bool {
        if let a = photo.contentIdentifier, let b = video.contentIdentifier, !same(a, b) { return false }
        guard folder(of: photo.path) == folder(of: video.path), stem(of: photo.path) == stem(of: video.path),
            let duration = video.duration, duration <= inferredMaxDuration, let photoDate = photo.date,
            let videoDate = video.date
        else { return false }
        return abs(photoDate.timeIntervalSince(videoDate)) <= inferredMaxGap
    }

    static func side(_ file: FileRecord) -> Side {
        Side(
            path: file.path, date: file.facts.creationDate, contentIdentifier: file.facts.contentIdentifier,
            duration: file.facts.duration)
    }

    static func side(_ asset: LibraryAsset) -> Side {
        Side(
            path: asset.path, date: asset.creationDate, contentIdentifier: asset.contentIdentifier,
            duration: asset.duration)
    }

    /// The best of several candidates for `path`: same folder, then same stem, then nearest capture
    /// time, then path order.
    static func best<T>(
        _ candidates: [T], for path: String, date: Date?, path candidatePath: (T) -> String,
        date candidateDate: (T) -> Date?
    ) -> T? {
        candidates.min { a, b in
            let keyA = key(candidatePath(a), candidateDate(a), path, date)
            let keyB = key(candidatePath(b), candidateDate(b), path, date)
            if keyA.0 != keyB.0 { return keyA.0 < keyB.0 }
            if keyA.1 != keyB.1 { return keyA.1 < keyB.1 }
            if keyA.2 != keyB.2 { return keyA.2 < keyB.2 }
            return candidatePath(a) < candidatePath(b)
        }
    }

    private static func key(_ candidate: String, _ candidateDate: Date?, _ path: String, _ date: Date?) -> (
        Int, Int, Double
    ) {
        let gap = (candidateDate != nil && date != nil) ? abs(candidateDate!.timeIntervalSince(date!)) : .infinity
        return (folder(of: candidate) == folder(of: path) ? 0 : 1, stem(of: candidate) == stem(of: path) ? 0 : 1, gap)
    }
}
