import Foundation
import Synchronization

/// The fixed date formats the parsers read (`en_US_POSIX`, UTC), each `DateFormatter` made once:
/// making one (ICU) cost several times what parsing with it does, and the scan made one or more per
/// dated file (about 5 % of a 20,000-file first scan's CPU, perf). A formatter is used under a lock,
/// so the scan's reading threads may share them.
enum DateFormats {
    private static let formatters = Mutex<[String: DateFormatter]>([:])

    /// `text` read with `format` in UTC, as a fresh `DateFormatter` with that format would read it.
    static func utcDate(_ text: String, format: String) -> Date? {
        formatters.withLock { cache in
            let formatter: DateFormatter
            if let made = cache[format] {
                formatter = made
            } else {
                formatter = DateFormatter()
                formatter.locale = Locale(identifier: "en_US_POSIX")
                formatter.timeZone = TimeZone(identifier: "UTC")
                formatter.dateFormat = format
                cache[format] = formatter
            }
            return formatter.date(from: text)
        }
    }
}
