import Foundation
internal import ReelMedia

extension ExportSession {
    /// How far one rendition of a ladder export is (`Progress.renditions`): the rungs in the ladder's
    /// order (largest first; an HDR ladder's HDR rungs, then its SDR rungs), then the audio. Its fraction follows what that rendition's own encoder
    /// has written, so a rung whose encoder lags behind the shared decode shows it; every one reaches
    /// 1 when the export completes. As JSON (status files, `--json` progress lines):
    /// `{"name": "v0", "width": 1280, "height": 720, "fraction": 0.42}`; the audio has no size.
    public struct RenditionProgress: Sendable, Equatable, Codable {
        /// The rendition's folder inside the ladder's (`v0`, `v1`, …; an HDR ladder's SDR rungs `s0`,
        /// `s1`, …; `a` for the audio).
        public var name: String
        /// The rung's picture size (nil for the audio).
        public var width: Int?
        public var height: Int?
        /// 0…1.
        public var fraction: Double

        public init(name: String, width: Int? = nil, height: Int? = nil, fraction: Double) {
            self.name = name
            self.width = width
            self.height = height
            self.fraction = fraction
        }

        init(_ rendition: TranscodeProgress.Rendition) {
            self.init(
                name: rendition.name, width: rendition.width, height: rendition.height, fraction: rendition.fraction)
        }

        /// Every key, the audio's size as `null`.
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(name, forKey: .name)
            try c.encode(width, forKey: .width)
            try c.encode(height, forKey: .height)
            try c.encode(fraction, forKey: .fraction)
        }

        private enum CodingKeys: String, CodingKey { case name, width, height, fraction }

        /// `renditions` with each fraction rounded to 0.001, as status files and JSON lines carry them.
        public static func rounded(_ renditions: [RenditionProgress]) -> [RenditionProgress] {
            renditions.map {
                var copy = $0
                copy.fraction = ($0.fraction * 1000).rounded() / 1000
                return copy
            }
        }
    }
}
