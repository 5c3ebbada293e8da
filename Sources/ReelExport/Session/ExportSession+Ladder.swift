import Foundation
internal import ReelMedia
import ReelSystem
import Synchronization

extension ExportSession {
    /// Exports `ladder` into the folder `destination`: planned from the session's preset (codec
    /// settings, colour, rotation, audio), with H.264 SDR rungs in the same boxes beside HEVC ones
    /// that keep HDR (`Ladder.sdrRungs`), run by `LadderTranscoder` into a hidden folder beside the
    /// destination (`TemporaryOutput`'s name), playlists written from what was measured
    /// (`LadderPlaylists`), every file checked against what was recorded, then renamed into place:
    /// the folder appears complete or not at all, and any failure or cancel removes it.
    func runLadder(_ ladder: Ladder, destination: URL, started: ContinuousClock.Instant) throws(ExportError)
        -> Result
    {
        let (range, metadata, background, overwrite, tag, gate, threads) = state.withLock {
            (
                $0.timeRange, $0.metadataPolicy, $0.backgroundColor, $0.overwrite, $0.temporaryTag, $0.publishGate,
                $0.codecThreads
            )
        }
        try OutputPublisher.check(destination: destination, asset: asset.url, overwrite: overwrite)
        let ladderPlan = try ladder.planned(
            asset: asset, preset: preset, timeRange: range, metadata: metadata, background: background, limits: limits)
        let (exportPlan, transcode, planned, audio) =
            (ladderPlan.exportPlan, ladderPlan.transcode, ladderPlan.video, ladderPlan.audio)
        var (fitted, dropped) = (ladderPlan.fitted, ladderPlan.dropped)
        // HEVC rungs keeping an HDR source's HLG or PQ take the HDR caps.
        let keepsHDR = ladderPlan.keepsHDR
        func rung(_ base: VideoEncoding, size: Ladder.Size, preset: Preset?) -> VideoEncoding {
            var encoding = base
            encoding.width = size.width
            encoding.height = size.height
            encoding.pixelAspect = Rational(1, 1)
            // A ladder preset's rung takes its own preset's encoder settings.
            if let video = preset?.video {
                encoding.crf = video.crf
                encoding.encoderPreset = video.encoderPreset
                encoding.profile = video.profile ?? encoding.profile
                encoding.maxBitrate = video.maxBitrate
            }
            switch encoding.codec {
            case .hevc:
                // Main 10 for the 10-bit rungs that keep HDR, Main for 8-bit ones (Apple: HEVC rungs at
                // most Main 10 / Main).
                encoding.profile = encoding.tenBit ? "main10" : "main"
            case .h264:
                encoding.profile = encoding.profile ?? "high"
            case .av1:
                // AV1's Main profile carries 8- and 10-bit 4:2:0 alike.
                break
            }
            let cap = Ladder.maxBitrate(for: size, codec: encoding.codec, hdr: keepsHDR)
            encoding.maxBitrate = min(encoding.maxBitrate ?? cap, cap)
            encoding.bufferSize = 2 * encoding.maxBitrate!
            encoding.alignedKeyframes = true
            return encoding
        }
        var rungs = fitted.map { box, size in
            rung(planned.encoding, size: size, preset: ladder.rungPresets?[box])
        }
        // SDR rungs beside the HDR ones: the same boxes, each with the settings and cap of the H.264
        // ladder's rung in that box (`Ladder.sdrRungPresets`).
        var sdrRungs: [VideoEncoding] = []
        if let sdr = ladderPlan.sdr {
            for (box, size) in fitted {
                sdrRungs.append(rung(sdr.encoding, size: size, preset: try ladder.sdrRungPreset(box: box)))
            }
        }

        // What a killed ladder export of this destination left (a folder nobody holds locked) goes first;
        // this one's folder stays locked until it is published or removed.
        TemporaryOutput.removeLeftovers(for: destination)
        let folder = TemporaryOutput.url(for: destination, tag: tag ?? TemporaryOutput.randomTag())
        var folderLock: OutputLock?
        while folderLock == nil {
            if mkdir(folder.path, 0o755) != 0 {
                throw ExportError(.outputFailed, "cannot create \(folder.path): \(String(cString: strerror(errno)))")
            }
            folderLock = OutputLock.lockNewFolder(folder.path)
        }
        setStatus(.exporting)
        var published = false
        defer {
            if !published { try? FileManager.default.removeItem(at: folder) }
            withExtendedLifetime(folderLock) {}
        }
        // Per title: with a quality target, each rung's CRF is searched and a rung that adds no
        // quality over the one below is left out.
        var quality: LadderQuality?
        if let target = effectiveQualityTarget {
            let searched = try searchedLadder(
                ladderPlan, rungs: &rungs, sdrRungs: &sdrRungs, sizes: fitted.map(\.size), target: target,
                started: started)
            rungs = searched.kept.map { rungs[$0] }
            if !sdrRungs.isEmpty { sdrRungs = searched.kept.map { sdrRungs[$0] } }
            fitted = searched.kept.map { fitted[$0] }
            quality = searched.quality
        }
        let sizes = fitted.map(\.size)

        var plan = LadderPlan(
            inputPath: transcode.inputPath, outputFolder: folder.path, videoStream: planned.stream, rungs: rungs,
            audio: audio, segmentSeconds: ladder.segmentSeconds, policy: limits, threads: threads)
        plan.sdrRungs = sdrRungs
        plan.inputByteRange = transcode.inputByteRange
        plan.startSeconds = transcode.startSeconds
        plan.endSeconds = transcode.endSeconds
        #if DEBUG
            if activeFault == .rungEncoder { plan.rungFault = 30 }
        #endif
        let written = try runLadderPipeline(plan, started: started)
        let outcome = LadderPlaylists.listingOrder(written)

        let language = asset.audioTrack?.language
        var (files, result) = LadderPlaylists.make(
            outcome, language: language, dropped: dropped.map(\.description), manifests: ladder.manifests)
        result.quality = quality
        for (path, text) in files {
            try ExportError.writing { () throws(AtomicFile.Failure) in
                try AtomicFile.write(
                    Data(text.utf8), to: folder.appendingPathComponent(path).path, replacing: false, syncFolder: false)
            }
        }
        injectLadderFault(into: folder, outcome: written)
        let verifying = ContinuousClock.now
        let bytes = try LadderVerification.verify(folder: folder, outcome: outcome, result: result)
        let verificationSeconds = (ContinuousClock.now - verifying) / .seconds(1)
        if cancelFlag.isRaised { throw ExportSession.cancelled() }
        try gate?()
        try LadderVerification.publish(folder: folder, to: destination, overwrite: overwrite)
        published = true
        ladderResult = result
        let top = outcome.video[0]
        let kind = [.hevc: "HEVC ", .av1: "AV1 "][planned.encoding.codec] ?? ""
        let listed = sizes.map(\.description).joined(separator: ", ")
        var summary = Result(
            bytes: bytes, durationSeconds: result.video[0].durationSeconds, width: top.width, height: top.height,
            videoCodec: planned.encoding.codec.rawValue, audioCodec: outcome.audio != nil ? "aac" : nil,
            networkOptimized: true,
            elapsedSeconds: (ContinuousClock.now - started) / .seconds(1), method: .transcode,
            decision: "an hls ladder of \(kind)\(listed)"
                + (sdrRungs.isEmpty ? "" : " with H.264 SDR rungs of the same sizes, tone-mapped")
                + (dropped.isEmpty
                    ? "" : " (above the source, dropped: \(dropped.map(\.description).joined(separator: ", ")))")
                + (quality.map(Self.describePerTitle) ?? ""))
        summary.verificationSeconds = verificationSeconds
        summary.timeRange = exportPlan.timeRange
        summary.requestedTimeRange = exportPlan.requestedTimeRange
        return summary
    }

    /// The decision's words for a per-title ladder: the target, each rung's CRF, the rungs dropped.
    static func describePerTitle(_ quality: LadderQuality) -> String {
        let crfs = quality.rungs.filter(\.kept).map { String(format: "%.1f", $0.crf) }.joined(separator: ", ")
        let useless = quality.rungs.filter { !$0.kept }.map(\.size)
        return ", per title at \(quality.target) (CRF \(crfs))"
            + (useless.isEmpty ? "" : "; dropped for adding no quality: " + useless.joined(separator: ", "))
    }

    /// Damages a written ladder as `outputFault` says, in debug builds (tests), between the write and
    /// the read-back: the second segment (or the only one) of the last video rung written (the last
    /// SDR rung when there are some) is cut to half
    /// (`truncate`) or has its first quarter, its `moof` and the start of its `mdat`, zeroed (`corrupt`).
    private func injectLadderFault(into folder: URL, outcome: LadderOutcome) {
        #if DEBUG
            guard let fault = activeFault, fault != .overshoot, let track = outcome.video.last,
                let segment = track.files.segments.dropFirst().first ?? track.files.segments.first,
                let handle = try? FileHandle(
                    forUpdating: folder.appendingPathComponent(track.folder).appendingPathComponent(segment.file))
            else { return }
            defer { try? handle.close() }
            switch fault {
            case .truncate:
                try? handle.truncate(atOffset: UInt64(segment.bytes / 2))
            case .corrupt:
                try? handle.write(contentsOf: Data(count: Int(segment.bytes / 4)))
            case .overshoot, .sampleSizes, .chunkOffsets, .rungEncoder:
                break
            }
        #endif
    }

    /// Runs the ladder under the stall watchdog, as a single export's encode runs.
    private func runLadderPipeline(_ plan: LadderPlan, started: ContinuousClock.Instant) throws(ExportError)
        -> LadderOutcome
    {
        try watched { [self, cancelFlag] heartbeat throws(MediaError) in
            try LadderTranscoder.run(plan, cancel: cancelFlag, heartbeat: heartbeat) { [self] update in
                publish(update, started: started)
            }
        }
    }
}

/// The checks a ladder's folder passes before it is published (`verify`, LadderReadBackCheck.swift),
/// and the publishing.
enum LadderVerification {
    /// Moves the finished folder into place in one step (`AtomicFile.moveFolderIntoPlace`): an
    /// existing destination is refused unless `overwrite`, when it is moved aside first and removed
    /// once the new folder is in place; a folder that appears meanwhile, even an empty one, is never
    /// replaced.
    static func publish(folder: URL, to destination: URL, overwrite: Bool) throws(ExportError) {
        if !overwrite, FileManager.default.fileExists(atPath: destination.path) {
            throw ExportError(
                .outputExists,
                "\(destination.path) already exists (ask to overwrite it: --overwrite, \"overwrite\": true)")
        }
        try ExportError.writing { () throws(AtomicFile.Failure) in
            try AtomicFile.moveFolderIntoPlace(folder.path, to: destination.path, replacing: overwrite)
        }
    }
}
