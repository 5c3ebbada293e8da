import Testing

@testable import ReelMedia

/// Which video stream an export takes when a file has several (`MediaInfo.chooseVideo`): FFmpeg's pick,
/// unless it holds stills while another stream holds motion (a Samsung Motion Photo's MP4).
struct VideoChoiceTests {
    static func video(
        _ index: Int, _ width: Int, _ height: Int, frames: Int?, seconds: Double?, isDefault: Bool = false
    ) -> StreamInfo {
        var stream = StreamInfo(index: index, kind: .video, codec: "h264", timeBase: Rational(1, 90_000))
        stream.width = width
        stream.height = height
        stream.frameCount = frames
        stream.durationSeconds = seconds
        stream.isDefault = isDefault
        return stream
    }

    @Test func samsungsStillsTrackGivesWayToTheMotion() throws {
        let motion = Self.video(0, 1024, 768, frames: 26, seconds: 0.93)
        let stills = Self.video(1, 2048, 1536, frames: 2, seconds: 0.67, isDefault: true)
        let (chosen, reason) = MediaInfo.chooseVideo([motion, stills], preferred: stills)
        #expect(chosen?.index == 0)
        #expect(
            reason
                == "track 0 (1024x768, 26 frames, 0.93 s) is the motion; track 1 (2048x1536, 2 frames, 0.67 s) holds stills"
        )
    }

    @Test func ffmpegsPickStandsWhenItIsMotion() {
        let main = Self.video(0, 1920, 1080, frames: 300, seconds: 10, isDefault: true)
        let proxy = Self.video(1, 480, 270, frames: 300, seconds: 10)
        let (chosen, reason) = MediaInfo.chooseVideo([main, proxy], preferred: main)
        #expect(
            chosen?.index == 0
                && reason?.hasPrefix("track 0 (1920x1080, 300 frames, 10.00 s) of 2 video tracks") == true)
        // One video stream: no choice to explain; a file whose every track is stills keeps FFmpeg's.
        #expect(MediaInfo.chooseVideo([main], preferred: main).1 == nil)
        let a = Self.video(0, 64, 64, frames: 1, seconds: nil)
        let b = Self.video(1, 64, 64, frames: 2, seconds: nil, isDefault: true)
        #expect(MediaInfo.chooseVideo([a, b], preferred: b).0?.index == 1)
    }

    @Test func amongMotionTheDefaultThenTheMostFramesThenTheLongest() {
        let stills = Self.video(0, 64, 64, frames: 2, seconds: 0.5)
        let short = Self.video(1, 64, 64, frames: 10, seconds: 1)
        let long = Self.video(2, 64, 64, frames: 30, seconds: 1)
        #expect(MediaInfo.chooseVideo([stills, short, long], preferred: stills).0?.index == 2)
        let flagged = Self.video(1, 64, 64, frames: 10, seconds: 1, isDefault: true)
        #expect(MediaInfo.chooseVideo([stills, flagged, long], preferred: stills).0?.index == 1)
    }
}
