import Foundation

/// Runs blocking file work (listing folders, hashing, parsing) on a thread of its own, so async
/// callers never block Swift's cooperative pool on disk I/O.
enum Blocking {
    static func run<T: Sendable>(_ name: String = "reel-library", _ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            let thread = Thread { continuation.resume(returning: body()) }
            thread.name = name
            thread.start()
        }
    }
}
