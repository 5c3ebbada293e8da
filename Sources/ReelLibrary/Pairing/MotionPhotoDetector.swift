import Foundation
import ReelBoxes
import ReelExport
import ReelMedia

/// Finds a Motion Photo's embedded video and checks it is really there (`LIVE-PHOTO-NOTES.md` §3):
/// Google's `Container:Directory`, the legacy `GCamera:MicroVideoOffset`, or Samsung's `mpvd` box.
/// A range is accepted only when it lies inside the file, starts with an ISO-BMFF `ftyp` box and
/// libavformat opens it as a video (reading only that range); otherwise the photo stays a plain photo
/// and the reason is recorded in `motionPhotoRejection`.
enum MotionPhotoDetector {
    static func detect(
        path: String, source: any ByteSource, xmp: XMPFacts?, mpvd: Box?, limits: InputLimits,
        into facts: inout FileFacts
    ) {
        var candidates: [(MotionPhotoVideo, String)] = []
        let size = source.count
        if let xmp {
            let timestamp = xmp.integer(XMPFacts.camera, "MotionPhotoPresentationTimestampUs")
            // Container directory: items after the primary are laid end to end at the end of the file.
            if let index = xmp.items.firstIndex(where: { $0.semantic == "MotionPhoto" }) {
                var tail: Int64 = 0
                var valid = true
                for item in xmp.items[index...] {
                    guard let length = item.length, length >= 0, length <= size, (item.padding ?? 0) >= 0 else {
                        valid = false
                        break
                    }
                    let (span, spanOverflow) = length.addingReportingOverflow(item.padding ?? 0)
                    let (sum, overflow) = tail.addingReportingOverflow(span)
                    guard !overflow, !spanOverflow else {
                        valid = false
                        break
                    }
                    tail = sum
                }
                if valid, let length = xmp.items[index].length, tail <= size {
                    let video = MotionPhotoVideo(
                        source: .containerDirectory, offset: size - tail, length: length,
                        presentationTimestampMicroseconds: timestamp.flatMap { $0 < 0 ? nil : $0 },
                        stillLength: size - tail)
                    candidates.append((video, "Container:Directory"))
                } else {
                    facts.motionPhotoRejection = "Container:Directory lengths do not fit the file's \(size) bytes"
                }
            }
            if candidates.isEmpty, xmp.integer(XMPFacts.camera, "MicroVideo") == 1,
                let offset = xmp.integer(XMPFacts.camera, "MicroVideoOffset")
            {
                if offset > 0, offset <= size {
                    let stamp = xmp.integer(XMPFacts.camera, "MicroVideoPresentationTimestampUs")
                    let video = MotionPhotoVideo(
                        source: .microVideoOffset, offset: size - offset, length: offset,
                        presentationTimestampMicroseconds: stamp.flatMap { $0 < 0 ? nil : $0 },
                        stillLength: size - offset)
                    candidates.append((video, "MicroVideoOffset"))
                } else {
                    facts.motionPhotoRejection = "MicroVideoOffset \(offset) does not fit the file's \(size) bytes"
                }
            }
        }
        if let mpvd {
            candidates.insert(
                (
                    MotionPhotoVideo(
                        source: .samsungMPVD, offset: mpvd.payload.lowerBound, length: mpvd.payloadSize,
                        stillLength: mpvd.range.upperBound == size ? mpvd.offset : nil), "mpvd"
                ),
                at: 0)
        }
        for (candidate, name) in candidates {
            switch validate(candidate, path: path, source: source, limits: limits) {
            case .success(let duration):
                var video = candidate
                video.duration = duration
                facts.motionPhoto = video
                facts.motionPhotoRejection = nil
                return
            case .failure(let reason):
                facts.motionPhotoRejection = "\(name): \(reason.reason)"
            }
        }
    }

    /// Whether the range holds a video libavformat opens: inside the file, `ftyp` at +4, a video
    /// stream. Returns its duration.
    static func validate(_ video: MotionPhotoVideo, path: String, source: any ByteSource, limits: InputLimits)
        -> Result<Double, FileInspector.Refusal>
    {
        guard video.offset >= 0, video.length >= 16, video.offset <= source.count - video.length else {
            return .failure(
                .init(reason: "the video's \(video.length) bytes at \(video.offset) are not inside the file"))
        }
        guard let head = try? source.read(at: video.offset, length: 8), Array(head[4..<8]) == Array("ftyp".utf8) else {
            return .failure(.init(reason: "no ISO-BMFF ftyp box at byte \(video.offset)"))
        }
        do {
            let info = try MediaProbe.probe(
                path: path, byteRange: video.offset..<(video.offset + video.length), policy: limits)
            guard info.bestVideoStream != nil else {
                return .failure(.init(reason: "the embedded file has no video stream"))
            }
            return .success(info.durationSeconds)
        } catch {
            return .failure(.init(reason: error.message))
        }
    }
}
