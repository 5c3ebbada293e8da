internal import CFFmpeg
internal import CFFmpegShim
import Logging

#if canImport(Glibc)
    import Glibc
#endif

/// Routes FFmpeg's own log lines (decoder warnings, x264's summary, …) into swift-log.
///
/// FFmpeg's callback is process-global, so this is too. ReelMedia installs the route itself the
/// first time it opens a file or a codec, so no host gets FFmpeg's chatter on stderr: by default
/// FFmpeg is quiet (errors only, and those go to the logger at `debug`, because Reel reports
/// failures itself); `configure(verbose: true)` lets everything down to FFmpeg's `info` level
/// through at the logger's `info` level. The host decides (the `reel` command: `--verbose` or
/// `REEL_FFMPEG_LOG=1`); the library reads no environment variable.
public enum FFmpegLog {
    /// Changes verbosity (installing the route if nothing has yet). Safe to call at any time.
    public static func configure(verbose: Bool) {
        installIfNeeded()
        av_log_set_level(verbose ? AV_LOG_INFO : AV_LOG_ERROR)
    }

    /// Installs the route once, quiet; every owner of an FFmpeg context calls this before creating it.
    static func installIfNeeded() { _ = installed }

    private static let installed: Void = {
        // SVT-AV1 (libsvtav1) prints its own lines on stderr, not through FFmpeg's log, at the
        // level its `SVT_LOG` variable names (info by default): fatal ones only, unless the host's
        // environment already says otherwise. Set here, before any codec is opened.
        setenv("SVT_LOG", "0", 0)
        av_log_set_level(AV_LOG_ERROR)
        reel_install_log_sink(sink)
    }()
}

private let ffmpegLogger = Logger(label: "reel.ffmpeg")

private let sink: reel_log_sink = { level, line in
    guard let line else { return }
    var text = String(cString: line)
    while text.last == "\n" { text.removeLast() }
    if text.isEmpty { return }
    let swiftLevel: Logger.Level
    switch level {
    case ...AV_LOG_ERROR: swiftLevel = av_log_get_level() >= AV_LOG_INFO ? .error : .debug
    case ...AV_LOG_WARNING: swiftLevel = .warning
    case ...AV_LOG_INFO: swiftLevel = .info
    default: swiftLevel = .debug
    }
    ffmpegLogger.log(level: swiftLevel, "\(text)")
}
