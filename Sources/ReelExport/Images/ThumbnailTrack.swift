import Foundation

/// A WebVTT thumbnail track for scrubbing previews (the JW Player / video.js convention): one cue
/// per picture, from its time to the next picture's (the last to the asset's end), whose text is
/// the sprite sheet's file name with a `#xywh=x,y,w,h` fragment naming the picture's cell.
public enum ThumbnailTrack {
    /// One picture on a sheet.
    public struct Cue: Sendable, Equatable {
        public var start: Double
        public var sheet: String
        public var x: Int
        public var y: Int
        public var width: Int
        public var height: Int
        public init(start: Double, sheet: String, x: Int, y: Int, width: Int, height: Int) {
            self.start = start
            self.sheet = sheet
            self.x = x
            self.y = y
            self.width = width
            self.height = height
        }
    }

    /// The track's text. Cues are sorted by start and made contiguous: each ends where the next
    /// starts, the last at `duration`; a cue that would last no time is dropped.
    public static func webVTT(cues: [Cue], duration: Double) -> String {
        let sorted = cues.sorted { $0.start < $1.start }
        var text = "WEBVTT\n"
        for (index, cue) in sorted.enumerated() {
            let end = index + 1 < sorted.count ? sorted[index + 1].start : duration
            // Millisecond timestamps: compare rounded values so no cue is empty once written.
            guard millis(end) > millis(cue.start) else { continue }
            text += "\n\(timestamp(cue.start)) --> \(timestamp(end))\n"
            text += "\(cue.sheet)#xywh=\(cue.x),\(cue.y),\(cue.width),\(cue.height)\n"
        }
        return text
    }

    private static func millis(_ seconds: Double) -> Int { Int((seconds * 1000).rounded()) }

    /// `hh:mm:ss.mmm`.
    static func timestamp(_ seconds: Double) -> String {
        let total = max(0, millis(seconds))
        return String(
            format: "%02d:%02d:%02d.%03d", total / 3_600_000, total / 60_000 % 60, total / 1000 % 60, total % 1000)
    }
}
