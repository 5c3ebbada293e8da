internal import ReelMedia

/// Where FFmpeg's own log goes.
public enum MediaLog {
    /// Routes FFmpeg's log into swift-log: errors only by default, down to FFmpeg's `info` when verbose.
    public static func configure(verbose: Bool) { FFmpegLog.configure(verbose: verbose) }
}
