internal import CFFmpeg
internal import CFFmpegShim

/// A timestamp, or nil when it is missing or so large that arithmetic on it could overflow (only a
/// corrupt or hostile file has those).
func sane(_ value: Int64) -> Int64? {
    value == reel_nopts_value() || value > 1 << 62 || value < -(1 << 62) ? nil : value
}

/// The container's start time in microseconds, or 0 when it is absurd.
func saneStart(_ seconds: Double) -> Int64 {
    guard seconds.isFinite, abs(seconds) < 1e9 else { return 0 }
    return Int64((seconds * Double(AV_TIME_BASE)).rounded())
}

/// A timestamp in a time base, in seconds.
func seconds(_ value: Int64, _ timeBase: AVRational) -> Double {
    Double(value) * Double(timeBase.num) / Double(timeBase.den)
}
