internal import CFFmpeg
internal import CFFmpegShim
import Logging

/// Routes FFmpeg's own log lines (decoder warnings, x264's summary, …) into swift-log.
///
/// FFmpeg's callback is process-global, so this is too. By default FFmpeg is quiet (errors only, and
/// those go to the logger at `debug`, because Reel reports failures itself); `verbose` lets everything
/// down to FFmpeg's `info` level through at the logger's `info` level.
public enum FFmpegLog {
    /// Installs the log route. Call once at start-up; safe to call again to change verbosity.
    public static func configure(verbose: Bool) {
        av_log_set_level(verbose ? AV_LOG_INFO : AV_LOG_ERROR)
        reel_install_log_sink(sink)
    }
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
