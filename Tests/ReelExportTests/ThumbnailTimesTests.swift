import Foundation
import ReelExport
import Testing

/// How `reel thumbnail` reads times and intervals, and the WebVTT track it writes for sheets.
@Suite("Thumbnail times and track", .timeLimit(.minutes(1)))
struct ThumbnailTimesTests {
    @Test func instantsAreSecondsTimecodesOrPercentages() throws {
        let cases: [(String, ThumbnailTimes.Instant)] = [
            ("12.5", .seconds(12.5)), ("12.5s", .seconds(12.5)), ("01:02.5", .seconds(62.5)),
            ("00:01:02.500", .seconds(62.5)), ("1:00:00", .seconds(3600)), ("50%", .percent(50)), ("0%", .percent(0)),
        ]
        for (text, expected) in cases { #expect(try ThumbnailTimes.instant(text) == expected, "\(text)") }
        for bad in ["", "abc", "-1", "101%", "-5%", "1:2:3:4", "12.5x"] {
            #expect(throws: ExportError.self, "\(bad)") { try ThumbnailTimes.instant(bad) }
        }
    }

    @Test func intervalsHaveUnits() throws {
        #expect(try ThumbnailTimes.interval("10s") == 10)
        #expect(try ThumbnailTimes.interval("10") == 10)
        #expect(try ThumbnailTimes.interval("500ms") == 0.5)
        #expect(try ThumbnailTimes.interval("2m") == 120)
        #expect(try ThumbnailTimes.interval("00:01:30") == 90)
        for bad in ["0", "0s", "-3s", "soon", "ms"] {
            #expect(throws: ExportError.self, "\(bad)") { try ThumbnailTimes.interval(bad) }
        }
    }

    @Test func timesResolveAgainstTheDuration() throws {
        #expect(try ThumbnailTimes.count(4).seconds(duration: 12) == [0, 3, 6, 9])
        #expect(try ThumbnailTimes.every(5).seconds(duration: 12) == [0, 5, 10])
        #expect(try ThumbnailTimes.every(4).seconds(duration: 12) == [0, 4, 8])
        #expect(try ThumbnailTimes.every(60).seconds(duration: 12) == [0])
        #expect(try ThumbnailTimes.at([.percent(100), .seconds(1)]).seconds(duration: 12) == [12, 1])
        let past = #expect(throws: ExportError.self) { try ThumbnailTimes.at([.seconds(12.5)]).seconds(duration: 12) }
        #expect(past?.code == .invalidArgument && past?.message.contains("past the end") == true)
        #expect(throws: ExportError.self) { try ThumbnailTimes.count(0).seconds(duration: 12) }
    }

    /// `still` is a library Live or Motion Photo's still's moment: read in any case, taken exactly,
    /// clamped into the movie, and refused in one line for an asset without one.
    @Test func stillIsThePhotosMoment() throws {
        #expect(try ThumbnailTimes.instant(" Still ") == .still)
        let times = ThumbnailTimes.at([.seconds(0.5), .still])
        #expect(times.namesStill && !ThumbnailTimes.at([.seconds(1)]).namesStill && !ThumbnailTimes.count(3).namesStill)
        #expect(try times.seconds(duration: 3, still: 1.5) == [0.5, 1.5])
        // A still stamped a hair past the last frame is shown at the end.
        #expect(try ThumbnailTimes.at([.still]).seconds(duration: 3, still: 3.01) == [3])
        let none = #expect(throws: ExportError.self) { try times.seconds(duration: 3) }
        #expect(none?.code == .invalidArgument && none?.message.contains("Live or Motion Photo") == true)
        #expect(none?.message.contains("\n") == false)
    }

    /// Cues run back to back from the first picture to the end, one per picture, with pixel
    /// rectangles; times past an hour keep their hours; a cue that would last nothing is dropped.
    @Test func theTrackIsContiguous() {
        let cues = [
            ThumbnailTrack.Cue(start: 3600, sheet: "b.jpg", x: 160, y: 0, width: 160, height: 90),
            ThumbnailTrack.Cue(start: 0, sheet: "a.jpg", x: 0, y: 0, width: 160, height: 90),
            ThumbnailTrack.Cue(start: 3600.0001, sheet: "b.jpg", x: 320, y: 0, width: 160, height: 90),
        ]
        let text = ThumbnailTrack.webVTT(cues: cues, duration: 3700.5)
        #expect(
            text == """
                WEBVTT

                00:00:00.000 --> 01:00:00.000
                a.jpg#xywh=0,0,160,90

                01:00:00.000 --> 01:01:40.500
                b.jpg#xywh=320,0,160,90

                """)
    }
}
