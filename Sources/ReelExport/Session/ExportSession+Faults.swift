import Foundation
import ReelBoxes
import ReelMedia
import Synchronization

extension ExportSession {
    /// Damage done to the finished temporary file before it is verified, to prove that verification
    /// catches it. Honoured only in debug builds (tests); release builds ignore it.
    enum OutputFault: String, Sendable {
        /// Cut the file to half its size.
        case truncate
        /// Overwrite a stretch in the middle of the media data with zeros.
        case corrupt
        /// Make the first encode under a size limit overshoot it (its rate cap four times too high), so
        /// the second pass runs.
        case overshoot
        /// Flip a bit of the second entry of the first sample-size table (`stsz`) in the moov: the
        /// index says one sample is 64 bytes longer or shorter than the one written.
        case sampleSizes = "sample-sizes"
        /// Flip a bit of the second entry of the first chunk-offset table (`stco`): the index places
        /// a chunk 64 bytes away from where it was written.
        case chunkOffsets = "chunk-offsets"
        /// Make a ladder's last video rung's encoder fail as it is given its 30th frame (1 s in at
        /// 30 fps), as x264 or x265 failing mid-run would (`LadderPlan.rungFault`); nothing else.
        case rungEncoder = "rung-encoder"
    }

    /// Damages the finished file as `outputFault` (or `injectOutputFault(named:)`) says, in debug builds.
    func injectFault(into url: URL) {
        #if DEBUG
            guard let fault = activeFault, fault != .overshoot, fault != .rungEncoder,
                let handle = try? FileHandle(forUpdating: url)
            else {
                return
            }
            defer { try? handle.close() }
            guard let size = try? handle.seekToEnd() else { return }
            switch fault {
            case .truncate:
                try? handle.truncate(atOffset: size / 2)
            case .corrupt:
                try? handle.seek(toOffset: size / 2)
                try? handle.write(contentsOf: Data(count: Int(min(size / 4, 1 << 20))))
            case .sampleSizes:
                // Header, version and flags, the common size (0: a table follows), the count.
                ExportSession.flipTableEntry("stsz", skipping: 12, in: url, handle: handle)
            case .chunkOffsets:
                // Header, version and flags, the count.
                ExportSession.flipTableEntry("stco", skipping: 8, in: url, handle: handle)
            case .overshoot, .rungEncoder:
                break
            }
        #endif
    }

    #if DEBUG
        /// Flips bit 6 of the last byte of the second 32-bit entry of the first track's `type` table
        /// (`moov/trak/mdia/minf/stbl/type`), whose entries start `skipping` bytes into its payload.
        private static func flipTableEntry(_ type: FourCC, skipping: Int64, in url: URL, handle: FileHandle) {
            guard let source = try? FileSource(path: url.path),
                let box = try? BoxReader(source).find(["moov", "trak", "mdia", "minf", "stbl", type])
            else { return }
            let byte = box.payload.lowerBound + skipping + 2 * 4 - 1
            guard byte < box.payload.upperBound, (try? handle.seek(toOffset: UInt64(byte))) != nil,
                let old = try? handle.read(upToCount: 1), old.count == 1
            else { return }
            try? handle.seek(toOffset: UInt64(byte))
            try? handle.write(contentsOf: Data([old[0] ^ 0x40]))
        }
    #endif

    /// `outputFault`, else the one injected for every session.
    var activeFault: OutputFault? {
        outputFault ?? ExportSession.injectedFault.withLock { $0 }
    }

    private static let injectedFault = Mutex<OutputFault?>(nil)

    /// Debug builds only (tests): damages the finished file of every session that sets no fault of its
    /// own, to prove that verification catches it: `truncate` (cut to half), `corrupt` (zeros in the
    /// middle), `overshoot` (a first encode under a size limit four times over its rate), `rung-encoder`
    /// (a ladder's last rung's encoder fails at its 30th frame); nil for none.
    /// The `reel` command sets it from `REEL_TEST_OUTPUT_FAULT`, so tests can damage what `reel export`
    /// or a worker writes. Returns false for a name it does not know. Release builds ignore it.
    @discardableResult
    public static func injectOutputFault(named name: String?) -> Bool {
        let fault = name.flatMap { $0.isEmpty ? nil : OutputFault(rawValue: $0) }
        injectedFault.withLock { $0 = fault }
        return name?.isEmpty ?? true || fault != nil
    }
}
