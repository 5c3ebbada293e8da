import Foundation

/// The threads each stage of one export may use, decided from the cores the export was given (its
/// share of a worker's core budget), so N jobs holding one core each on N cores never run more
/// codec threads than cores.
///
/// The share is the job's cores: the decoder and the encoder (x264's frame threads, x265's pool) get
/// that many each. They run one after the other on the same frames (the decoder on the reader
/// thread, the encoder on the writer thread), so together they keep `share` cores busy, not twice
/// that. The scaler and the tone mapper always get one thread: both run on the reader thread between
/// the decoder and the encoder, and slice threads there only add hand-offs (1080p→720p on 2 cores:
/// 6 % less wall time with one than with swscale's automatic count). A share of 0 is no budget at
/// all: every codec chooses its own count from every core (`reel export` on its own).
public struct StageThreads: Sendable, Codable, Equatable {
    /// Cores the export was given; 0: none fixed (the codecs choose).
    public var share: Int
    /// The video decoder's `thread_count` (frame and slice threads); 0: libavcodec chooses.
    public var decoder: Int
    /// The video encoder's threads: x264's `thread_count`, x265's pool size; 0: the encoder chooses.
    public var encoder: Int
    /// swscale's slice threads.
    public var scaler: Int
    /// The tone mapper's threads (HDR to SDR; it runs on the reader thread).
    public var toneMapper: Int
    /// What libx265 is told in `x265-params` about its threads ("" with no budget).
    public var x265: String

    /// The stages' threads for an export holding `share` cores (0: no budget).
    public init(share: Int) {
        let share = max(0, share)
        self.share = share
        decoder = share
        encoder = share
        scaler = 1
        toneMapper = 1
        self.x265 = StageThreads.x265Parameters(share: share)
    }

    /// libx265 (FFmpeg 5.1) ignores `thread_count`: its threads are its pool (`pools`) and its frame
    /// threads. One core means no pool at all: with `pools=1` x265 still hands every row of CTUs
    /// between its API, frame and pool threads, and on a machine with more runnable threads than
    /// cores each hand-off waits for a time slice (a 15-frame 720p encode that needs 2.6 s of CPU took
    /// 351 s with 40 busy threads on 2 cores; with none, 51 s, its fair share). More cores: a pool of
    /// exactly that many threads, instead of one per core of the machine.
    static func x265Parameters(share: Int) -> String {
        switch share {
        case 0: ""
        case 1: "pools=none:frame-threads=1"
        default: "pools=\(share)"
        }
    }

    /// One line for logs and the benchmark: `share 1: decoder 1, x264/x265 1 (pools=none:...), ...`.
    public var summary: String {
        guard share > 0 else { return "share all: the codecs choose from every core" }
        return "share \(share): decoder \(decoder), encoder \(encoder) (x265 \(x265)), scaler \(scaler), "
            + "tone mapper \(toneMapper)"
    }

    /// Cores this process may run on: the CPUs of its affinity mask (`sched_getaffinity`'s, what
    /// `taskset` and cpusets limit), fewer when a cgroup v2 CPU quota (`cpu.max` of its cgroup or any
    /// parent) allows less than that, rounded up; at least 1.
    public static func availableCores() -> Int {
        cores(affinity: affinityCount(), quotas: cgroupQuotas())
    }

    /// The rule of `availableCores`: `affinity` CPUs (nil when unknown: the online CPUs), each
    /// `cpu.max` line of `quotas` ("max 100000", or "150000 100000": 1.5 cores) lowering it to its
    /// quota divided by its period, rounded up.
    static func cores(affinity: Int?, quotas: [String]) -> Int {
        var cores = affinity ?? ProcessInfo.processInfo.activeProcessorCount
        for line in quotas {
            let fields = line.split(separator: " ")
            guard fields.count == 2, let quota = Double(fields[0]), let period = Double(fields[1]), quota > 0,
                period > 0
            else { continue }
            cores = min(cores, Int((quota / period).rounded(.up)))
        }
        return max(1, cores)
    }

    /// The CPUs of this process's affinity mask, from `/proc/self/status` (`Cpus_allowed_list`, what
    /// `sched_getaffinity` returns; Glibc's wrapper is not visible to Swift).
    private static func affinityCount() -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix("Cpus_allowed_list:") })
        else { return nil }
        return cpuCount(list: String(line.dropFirst("Cpus_allowed_list:".count)))
    }

    /// The CPUs a list such as "0-3,6,8-9" names (7); nil when it names none or cannot be read.
    static func cpuCount(list: String) -> Int? {
        var count = 0
        for part in list.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ",") {
            let bounds = part.split(separator: "-").map { Int($0.trimmingCharacters(in: .whitespaces)) }
            switch bounds.count {
            case 1:
                guard bounds[0] != nil else { return nil }
                count += 1
            case 2:
                guard let low = bounds[0], let high = bounds[1], high >= low else { return nil }
                count += high - low + 1
            default:
                return nil
            }
        }
        return count > 0 ? count : nil
    }

    /// `cpu.max` of this process's cgroup (v2) and of each parent up to the root, where readable.
    private static func cgroupQuotas() -> [String] {
        guard let text = try? String(contentsOfFile: "/proc/self/cgroup", encoding: .utf8),
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix("0::") })
        else { return [] }
        var path = String(line.dropFirst(3))
        var quotas: [String] = []
        while true {
            let file = "/sys/fs/cgroup" + (path == "/" ? "" : path) + "/cpu.max"
            if let value = try? String(contentsOfFile: file, encoding: .utf8) {
                quotas.append(value.trimmingCharacters(in: .whitespacesAndNewlines))
            }
            guard path != "/", !path.isEmpty else { break }
            path = (path as NSString).deletingLastPathComponent
        }
        return quotas
    }
}
