/// One re-encoding export, as a two-thread pipeline so both cores stay busy:
///
/// - the **reader** (`TranscodeReader`, on the calling thread) owns the input file, the video decode
///   stage and the audio stage: it demuxes, decodes, scales and rotates video into frames, and
///   decodes, resamples and encodes audio (cheap);
/// - the **writer** (`TranscodeWriter`, on its own thread while the input is read) owns the output
///   file and the video encode stage: it encodes the frames and writes every packet.
///
/// The output's header is written first; then the writer *moves* to its thread (a `Baton` the
/// thread takes it from), and the join hands it back for the trailer. The compiler checks the move:
/// nothing the reader keeps shares a region with the writer, and the two sides talk only through
/// `PipelineQueues`, whose frames and packets move, never shared. Audio alone runs on one thread.
final class TranscodePipeline {
    private let reader: TranscodeReader
    /// The writer, while no thread runs it.
    private let writer: Baton<TranscodeWriter>
    private let queues: PipelineQueues
    private let window: TimeWindow
    private let cancel: CancellationFlag
    private let progress: (TranscodeProgress) -> Void

    /// Opens the stages for `video` and `audio` (at least one), creates the output file and writes
    /// its header.
    init(
        plan: TranscodePlan, video: StreamEncoding<VideoEncoding>?, audio: StreamEncoding<AudioEncoding>?,
        input: InputFile, cancel: CancellationFlag, heartbeat: Heartbeat,
        progress: @escaping (TranscodeProgress) -> Void
    ) throws(MediaError) {
        if video == nil && audio == nil {
            throw MediaError(
                kind: .invalidArgument, call: "plan", message: "nothing to export: no video or audio stream")
        }
        let window = TimeWindow(plan: plan, info: input.info)
        // Single-threaded codecs (one job per core) need less slack between the stages: three
        // frames keep both busy and hold half the memory.
        let poolSize = plan.threads == 1 ? 3 : 6
        let threads = StageThreads(share: plan.threads)
        let queues = PipelineQueues(frames: poolSize)
        let output = try OutputFile(path: plan.outputPath, muxer: plan.container.muxer)
        output.heartbeat = heartbeat

        // Reader-side stages take `input`, writer-side ones `output`; what crosses between them
        // is values (`CodecParameters`, `StreamTarget`, formats, rates), so the two stay apart.
        var videoDecode: VideoDecodeStage?
        var videoEncode: VideoEncodeStage?
        if let video {
            let decode = try VideoDecodeStage(
                input: input, streamIndex: video.stream, encoding: video.encoding, window: window,
                pool: queues.freeFrames, poolSize: poolSize, decoderThreads: threads.decoder,
                emit: { (frame: Frame) throws(MediaError) in try queues.work.push(.frame(frame)) })
            if let seconds = plan.posterSeconds, PosterGrab.accepts(video.encoding) {
                decode.poster = PosterGrab(seconds: seconds, quality: plan.posterQuality)
            }
            let source = try decode.describeSource()
            videoEncode = try VideoEncodeStage(
                encoding: video.encoding, source: source.parameters, language: source.language,
                format: decode.outputFormat, timeBase: decode.timeBase, frameRate: decode.frameRate,
                threads: threads.encoder, output: output)
            videoDecode = decode
            // Carriers for audio packets on their way to the writer thread; audio alone needs none.
            for _ in 0..<queues.freePackets.capacity { try queues.freePackets.push(try Packet()) }
        }
        // The audio encoder opens before the header (the output stream is described from it); its
        // decoder and timeline join it once the header has fixed the stream's time base.
        var audioOutput: (encoder: Encoder, stream: Int32)?
        if let audio {
            let encoder = try AudioStage.openEncoder(audio.encoding, globalHeader: output.wantsGlobalHeader)
            let stream = try output.addStream(
                describedBy: try CodecParameters(of: encoder.context), timeBase: encoder.context.pointee.time_base,
                language: input.language(ofStream: audio.stream))
            output.declare(stream: stream, kind: .audio, copied: false)
            audioOutput = (encoder, stream)
        }
        try output.writeHeader(metadata: plan.metadata, options: Transcoder.muxerOptions(plan))
        var audioStage: AudioStage?
        if let audio, let audioOutput {
            audioStage = try AudioStage(
                input: input, streamIndex: audio.stream, encoder: audioOutput.encoder,
                target: output.target(ofStream: audioOutput.stream), window: window)
        }
        reader = try TranscodeReader(
            input: input, video: videoDecode, audio: audioStage, queues: queues, window: window, cancel: cancel,
            progress: progress)
        var scorer: EncodeScorer?
        if plan.measuresQuality, let videoEncode, let video {
            let stream = try videoEncode.encodedStream()
            scorer = try EncodeScorer(
                parameters: stream.parameters, timeBase: stream.timeBase,
                stride: EncodeScorer.stride(
                    width: video.encoding.width, height: video.encoding.height,
                    tenBit: video.encoding.tenBit))
        }
        writer = Baton(TranscodeWriter(output: output, video: videoEncode, queues: queues, scorer: scorer))
        self.queues = queues
        self.window = window
        self.cancel = cancel
        self.progress = progress
    }

    /// Runs the export to its end. Call once.
    func run() throws(MediaError) -> TranscodeOutcome {
        let writer: TranscodeWriter
        if reader.video == nil {
            // Audio alone is one cheap stage: handing each packet to a second thread would cost more
            // (two futex wake-ups a packet) than the muxing it moves off this one.
            guard let taken = self.writer.take() else { throw MediaError.pipelineStopped() }
            writer = taken
            try reader.read(audioTo: { (packet: Packet) throws(MediaError) in try writer.write(packet) })
        } else {
            writer = try readBesideWriterThread()
        }
        return try finish(with: writer)
    }

    /// The reader on this thread, the writer on another; returns the writer once its thread ended.
    private func readBesideWriterThread() throws(MediaError) -> TranscodeWriter {
        let baton = writer
        let queues = queues
        let thread = JoinableThread(name: "reel-writer") { () -> sending (TranscodeWriter?, MediaError?) in
            guard let writer = baton.take() else { return (nil, MediaError.pipelineStopped()) }
            do throws(MediaError) {
                try writer.encodeAndWrite()
                return (writer, nil)
            } catch {
                // Wake and stop the reader wherever it waits.
                queues.abort()
                return (writer, error)
            }
        }
        let readerError: MediaError?
        do throws(MediaError) {
            try reader.read(audioTo: reader.audioToWriter())
            queues.work.close()
            readerError = nil
        } catch {
            queues.abort()
            readerError = error
        }
        let (writer, writerError) = thread.join()
        // Whichever side failed first is the cause; the other side's `pipelineStopped` is only the
        // consequence of the abort.
        if let writerError, writerError.kind != .pipelineStopped || readerError == nil { throw writerError }
        if let readerError { throw readerError }
        guard let writer else { throw MediaError.pipelineStopped() }
        return writer
    }

    private func finish(with writer: TranscodeWriter) throws(MediaError) -> TranscodeOutcome {
        if cancel.isRaised { throw MediaError.cancelled() }
        let frames = queues.framesEncoded.load(ordering: .relaxed)
        if reader.video != nil, frames == 0 {
            throw MediaError(
                kind: .unreadableInput, call: "decode", message: "no video frame could be decoded from the input")
        }
        let audioFrames = reader.audio?.framesEncoded ?? 0
        if reader.video == nil, audioFrames == 0 {
            throw MediaError(
                kind: .unreadableInput, call: "decode", message: "no audio could be decoded from the input")
        }
        let bytes = try writer.finish(
            share: Transcoder.finalizingShareTranscode, frames: frames, mediaSeconds: window.totalSeconds,
            progress: progress)
        reader.report(phase: .finalizing, fraction: 1)
        var outcome = TranscodeOutcome(
            bytes: bytes, videoFramesEncoded: frames, audioFramesEncoded: audioFrames, packetsCopied: 0,
            written: writer.written, lock: try writer.lock(), poster: reader.video?.poster?.bytes)
        outcome.flushSeconds = writer.flushSeconds
        outcome.quality = writer.quality
        return outcome
    }
}
