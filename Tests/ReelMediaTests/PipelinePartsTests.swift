import Foundation
import ReelSystem
import TestSupport
import Testing

@testable import ReelMedia

/// The pipeline's pure parts, driven without files: the queues between its threads, the hand-off
/// of a pipeline side, rotation, time windows, timestamps, the moov estimate and the audio timeline.
@Suite("Pipeline parts", .timeLimit(.minutes(10)))
struct PipelinePartsTests {
    // MARK: - BoundedQueue

    @Test func aClosedQueueHandsOutWhatItHoldsInOrderThenNil() throws {
        let queue = BoundedQueue<Int>(capacity: 3)
        for value in 1...3 { try queue.push(value) }
        queue.close()
        #expect(try queue.pop() == 1)
        #expect(try queue.pop() == 2)
        #expect(try queue.pop() == 3)
        #expect(try queue.pop() == nil)
        #expect(try queue.pop() == nil)
    }

    @Test func anAbortedQueueThrowsOnBothSidesEvenWithElementsLeft() throws {
        let queue = BoundedQueue<Int>(capacity: 2)
        try queue.push(1)
        queue.abort()
        #expect(throws: MediaError.pipelineStopped()) { try queue.push(2) }
        #expect(throws: MediaError.pipelineStopped()) { _ = try queue.pop() }
    }

    @Test func aProducerAheadOfItsConsumerWaitsForRoomAndNothingIsLostOrReordered() async throws {
        let queue = BoundedQueue<Int>(capacity: 2)
        let received = try await onOwnThread { () throws -> [Int] in
            let producer = JoinableThread(name: "producer") { () -> MediaError? in
                do throws(MediaError) {
                    for value in 0..<500 { try queue.push(value) }
                    queue.close()
                    return nil
                } catch {
                    return error
                }
            }
            var values: [Int] = []
            while let value = try queue.pop() { values.append(value) }
            if let error = producer.join() { throw error }
            return values
        }
        #expect(received == Array(0..<500))
    }

    @Test(arguments: [false, true])
    func abortWakesASideWaitingOnAnEmptyOrFullQueue(full: Bool) async throws {
        let queue = BoundedQueue<Int>(capacity: 1)
        if full { try queue.push(0) }
        let error = try await onOwnThread { () -> MediaError? in
            let waiter = JoinableThread(name: "waiter") { () -> MediaError? in
                do throws(MediaError) {
                    if full { try queue.push(1) } else { _ = try queue.pop() }
                    return nil
                } catch {
                    return error
                }
            }
            // The waiter is blocked in the queue before the abort, so only the abort can wake it.
            let blocked = waitBlocking(within: .seconds(30)) { queue.waiting == 1 }
            queue.abort()
            return blocked ? waiter.join() : nil
        }
        #expect(error?.kind == .pipelineStopped)
    }

    // MARK: - Baton and JoinableThread

    @Test func aValueMovedIntoAThreadComesBackFromTheJoin() async throws {
        final class Counter { var count = 0 }
        let total = try await onOwnThread { () -> Int in
            let baton = Baton(Counter())
            let thread = JoinableThread(name: "worker") { () -> sending Counter? in
                guard let counter = baton.take() else { return nil }
                for _ in 0..<1000 { counter.count += 1 }
                return counter
            }
            let counter = thread.join()
            #expect(baton.take() == nil, "a baton hands its value over once")
            return counter?.count ?? -1
        }
        #expect(total == 1000)
    }

    // MARK: - Rotation

    /// A plane of `width`×`height` samples numbered row by row, in rows of `stride` samples.
    static func plane<Sample: FixedWidthInteger>(_ width: Int, _ height: Int, stride: Int) -> [Sample] {
        var samples = [Sample](repeating: .max, count: stride * height)
        for y in 0..<height { for x in 0..<width { samples[y * stride + x] = Sample(y * width + x) } }
        return samples
    }

    static func rotated<Sample: FixedWidthInteger>(
        _ source: [Sample], _ width: Int, _ height: Int, stride: Int, degrees: Int, mirrored: Bool = false
    ) -> [Sample] {
        let (outWidth, outHeight) = degrees == 180 || degrees == 0 ? (width, height) : (height, width)
        let outStride = outWidth + 3
        var destination = [Sample](repeating: 0, count: outStride * outHeight)
        source.withUnsafeBufferPointer { from in
            destination.withUnsafeMutableBufferPointer { to in
                Rotator.rotatePlane(
                    from.baseAddress!, stride, to.baseAddress!, outStride, width: width, height: height,
                    degrees: degrees, mirrored: mirrored)
            }
        }
        // Drop the padding, so results compare as plain rows.
        return (0..<outHeight).flatMap { y in destination[(y * outStride)..<(y * outStride + outWidth)] }
    }

    @Test func quarterAndHalfTurnsMoveEverySampleWhereADisplayWouldShowIt() {
        // 3×2, numbered:  0 1 2
        //                 3 4 5
        let source: [UInt8] = Self.plane(3, 2, stride: 5)
        #expect(Self.rotated(source, 3, 2, stride: 5, degrees: 90) == [3, 0, 4, 1, 5, 2])
        #expect(Self.rotated(source, 3, 2, stride: 5, degrees: 270) == [2, 5, 1, 4, 0, 3])
        #expect(Self.rotated(source, 3, 2, stride: 5, degrees: 180) == [5, 4, 3, 2, 1, 0])
    }

    @Test func mirrorsComeBeforeTheTurn() {
        // 3×2, numbered:  0 1 2   mirrored:  2 1 0
        //                 3 4 5              5 4 3
        let source: [UInt8] = Self.plane(3, 2, stride: 5)
        #expect(Self.rotated(source, 3, 2, stride: 5, degrees: 0, mirrored: true) == [2, 1, 0, 5, 4, 3])
        // A top-bottom mirror is a left-right mirror and a half turn.
        #expect(Self.rotated(source, 3, 2, stride: 5, degrees: 180, mirrored: true) == [3, 4, 5, 0, 1, 2])
        // Mirrored, then a quarter turn clockwise: a transpose flipped both ways.
        #expect(Self.rotated(source, 3, 2, stride: 5, degrees: 90, mirrored: true) == [5, 2, 4, 1, 3, 0])
        // Mirrored, then a quarter turn counter-clockwise: a transpose.
        #expect(Self.rotated(source, 3, 2, stride: 5, degrees: 270, mirrored: true) == [0, 3, 1, 4, 2, 5])
    }

    @Test func fourQuarterTurnsOfATenBitPlaneGiveItBack() {
        let (width, height) = (7, 5)
        let source: [UInt16] = Self.plane(width, height, stride: width)
        var plane = source
        var (w, h) = (width, height)
        for _ in 0..<4 {
            plane = Self.rotated(plane, w, h, stride: w, degrees: 90)
            (w, h) = (h, w)
        }
        #expect(plane == source)
        #expect(
            Self.rotated(
                Self.rotated(source, width, height, stride: width, degrees: 180), width, height, stride: width,
                degrees: 180) == source)
    }

    // MARK: - Untagged matrices

    /// A stream with no matrix tag is BT.601 up to SD's sides (1024 long, 576 short) and BT.709
    /// beyond, whichever way round its picture is stored: a quarter turn never changes the guess.
    @Test(arguments: [
        (640, 360, Scaler.UntaggedMatrix.bt601), (720, 480, .bt601), (720, 576, .bt601), (1024, 576, .bt601),
        (480, 480, .bt601), (1025, 400, .bt709), (720, 577, .bt709), (1280, 720, .bt709), (1920, 1080, .bt709),
        (3840, 2160, .bt709),
    ])
    func theUntaggedMatrixDependsOnTheSidesNotOnTheOrientation(
        width: Int, height: Int, _ matrix: Scaler.UntaggedMatrix
    ) {
        #expect(Scaler.untaggedMatrix(width: width, height: height) == matrix, "\(width)x\(height)")
        #expect(Scaler.untaggedMatrix(width: height, height: width) == matrix, "\(height)x\(width)")
    }

    // MARK: - Time window and timestamps

    @Test func aWindowWithoutARangeCoversTheWholeSource() {
        let window = TimeWindow(startSeconds: nil, endSeconds: nil, sourceStartSeconds: 0.2, durationSeconds: 10)
        #expect(window.originMicroseconds == 200_000)
        #expect(window.endMicroseconds == nil)
        #expect(window.totalSeconds == 10)
        #expect(!window.hasRangeStart)
    }

    @Test func aRangeIsOnTheSourcesClockAndItsLengthStopsAtTheEnd() {
        let window = TimeWindow(startSeconds: 1.5, endSeconds: 3, sourceStartSeconds: 0.2, durationSeconds: 10)
        #expect(window.originMicroseconds == 1_700_000)
        #expect(window.endMicroseconds == 3_200_000)
        #expect(window.totalSeconds == 1.5)
        #expect(window.hasRangeStart)
        let past = TimeWindow(startSeconds: 8, endSeconds: 20, sourceStartSeconds: 0, durationSeconds: 10)
        #expect(past.totalSeconds == 2)
        let after = TimeWindow(startSeconds: 12, endSeconds: nil, sourceStartSeconds: 0, durationSeconds: 10)
        #expect(after.totalSeconds == 0.001)
    }

    @Test func absurdStartTimesCountAsZero() {
        for start in [Double.nan, .infinity, 2e9, -2e9] {
            #expect(saneStart(start) == 0)
            let window = TimeWindow(startSeconds: nil, endSeconds: nil, sourceStartSeconds: start, durationSeconds: 1)
            #expect(window.originMicroseconds == 0)
        }
        #expect(saneStart(-0.5) == -500_000)
    }

    @Test func timestampsNearTheLimitsOfInt64AreTreatedAsMissing() {
        #expect(sane(Int64.min) == nil)  // AV_NOPTS_VALUE
        #expect(sane(0) == 0)
        #expect(sane(1 << 62) == 1 << 62)
        #expect(sane(-(1 << 62)) == -(1 << 62))
        #expect(sane((1 << 62) + 1) == nil)
        #expect(sane(-(1 << 62) - 1) == nil)
        #expect(sane(Int64.max) == nil)
    }

    // MARK: - Moov estimate

    @Test func theMoovEstimateCountsDeclaredSamplesOrGuessesThemFromRateAndDuration() {
        typealias Stream = MoovEstimate.Stream
        let base = 16_384
        let perStream = 2_048
        let declared = Stream(kind: .video, declaredSamples: 300, durationSeconds: 10, extradataBytes: 40)
        #expect(
            MoovEstimate.bytes(streams: [declared], fileSeconds: 10, metadata: [:]) == base + perStream + 13_500 + 40)
        let guessed = Stream(kind: .video, declaredSamples: 0, durationSeconds: 10, frameRate: 30)
        #expect(MoovEstimate.bytes(streams: [guessed], fileSeconds: 99, metadata: [:]) == base + perStream + 13_500)
        // Unknown rate: 60 fps; absurd rate: capped at 240; unknown duration: the file's.
        let unknownRate = Stream(kind: .video, declaredSamples: 0, durationSeconds: nil)
        #expect(MoovEstimate.bytes(streams: [unknownRate], fileSeconds: 10, metadata: [:]) == base + perStream + 27_000)
        let absurdRate = Stream(kind: .video, declaredSamples: 0, durationSeconds: 10, frameRate: 10_000)
        #expect(MoovEstimate.bytes(streams: [absurdRate], fileSeconds: 10, metadata: [:]) == base + perStream + 108_000)
        // AAC at 48 kHz: 46.875 frames a second.
        let audio = Stream(kind: .audio, declaredSamples: 0, durationSeconds: 10, sampleRate: 48_000, frameSize: 1024)
        #expect(MoovEstimate.bytes(streams: [audio], fileSeconds: 10, metadata: [:]) == base + perStream + 21_093)
        let tagged = MoovEstimate.bytes(streams: [], fileSeconds: 10, metadata: ["title": "abc"])
        #expect(tagged == base + 5 + 3 + 64)
        let huge = Stream(kind: .video, declaredSamples: 1 << 40, durationSeconds: nil)
        #expect(MoovEstimate.bytes(streams: [huge], fileSeconds: 0, metadata: [:]) == 256 << 20)
    }

    // MARK: - Audio timeline (sample rate 1000: 40 samples of tolerance)

    @Test func theFirstSamplesArePlacedAtTheirTimestampAndPrimingBeforeZeroIsDropped() {
        var timeline = AudioTimeline(sampleRate: 1000, endPosition: nil)
        #expect(timeline.place(100) == nil)  // no frame anchored yet
        timeline.anchor(at: -30)
        #expect(timeline.place(100) == .init(skip: 30, take: 70, firstPosition: 0))
        var late = AudioTimeline(sampleRate: 1000, endPosition: nil)
        late.anchor(at: 500)
        #expect(late.place(100) == .init(take: 100, firstPosition: 500))
        var untimed = AudioTimeline(sampleRate: 1000, endPosition: nil)
        untimed.anchor(at: nil)
        #expect(untimed.place(0) == nil)
        #expect(untimed.place(10) == .init(take: 10, firstPosition: 0))
    }

    @Test func jitterIsClosedUpAGapIsFilledWithSilenceAndAnOverlapIsDropped() {
        var timeline = AudioTimeline(sampleRate: 1000, endPosition: nil)
        timeline.anchor(at: 0)
        _ = timeline.place(100)
        // 20 samples late: within the tolerance, so the samples follow on.
        timeline.anchor(at: 120)
        #expect(timeline.place(100) == .init(take: 100))
        #expect(timeline.writtenEnd == 200)
        // A jump to 300: 100 samples of silence first.
        timeline.anchor(at: 300)
        #expect(timeline.place(100) == .init(silence: 100, take: 100))
        #expect(timeline.writtenEnd == 400)
        // Back to 340: the first 60 samples were already written.
        timeline.anchor(at: 340)
        #expect(timeline.place(100) == .init(skip: 60, take: 40))
        #expect(timeline.writtenEnd == 440)
        // A frame without a timestamp follows on.
        timeline.anchor(at: nil)
        #expect(timeline.place(10) == .init(take: 10))
    }

    @Test func aWildJumpWritesAtMostAMinuteOfSilence() {
        var timeline = AudioTimeline(sampleRate: 1000, endPosition: nil)
        timeline.anchor(at: 0)
        _ = timeline.place(10)
        timeline.anchor(at: 10_000_000)
        #expect(timeline.place(10)?.silence == 60_000)
    }

    @Test func nothingPastTheRangesEndIsKept() {
        var timeline = AudioTimeline(sampleRate: 1000, endPosition: 250)
        timeline.anchor(at: 0)
        #expect(timeline.place(100) == .init(take: 100, firstPosition: 0))
        #expect(timeline.place(100) == .init(take: 100))
        #expect(!timeline.reachedEnd)
        #expect(timeline.place(100) == .init(take: 50))
        #expect(timeline.reachedEnd)
        // Samples a resampler still held when the end was reached add nothing, not even silence.
        #expect(timeline.place(100) == nil)
    }

    @Test func aGapAcrossTheRangesEndIsFilledOnlyUpToTheEnd() {
        var timeline = AudioTimeline(sampleRate: 1000, endPosition: 250)
        timeline.anchor(at: 0)
        _ = timeline.place(200)
        timeline.anchor(at: 400)
        #expect(timeline.place(100) == .init(silence: 50))
        #expect(timeline.reachedEnd && timeline.writtenEnd == 250)
    }
}
