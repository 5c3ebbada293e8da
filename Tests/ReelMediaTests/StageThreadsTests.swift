import Testing

@testable import ReelMedia

@Suite("Stage threads", .timeLimit(.minutes(1)))
struct StageThreadsTests {
    @Test func oneCoreIsOneThreadInEveryStageAndNoX265Pool() {
        let threads = StageThreads(share: 1)
        #expect(threads.decoder == 1 && threads.encoder == 1 && threads.scaler == 1 && threads.toneMapper == 1)
        #expect(threads.x265 == "pools=none:frame-threads=1")
    }

    @Test(arguments: [2, 3, 4, 16])
    func aShareOfCoresSizesTheCodecsAndTheX265Pool(share: Int) {
        let threads = StageThreads(share: share)
        #expect(threads.decoder == share && threads.encoder == share)
        // The scaler and the tone mapper run on the reader thread: one each, whatever the share.
        #expect(threads.scaler == 1 && threads.toneMapper == 1)
        #expect(threads.x265 == "pools=\(share)")
        #expect(max(threads.decoder, threads.encoder, threads.scaler, threads.toneMapper) <= share)
    }

    @Test func noBudgetLetsTheCodecsChoose() {
        let threads = StageThreads(share: 0)
        #expect(threads.decoder == 0 && threads.encoder == 0 && threads.x265.isEmpty)
        #expect(StageThreads(share: -3) == threads)
    }

    @Test func theAffinityMaskAndTheCgroupQuotaLimitTheCores() {
        #expect(StageThreads.cores(affinity: 4, quotas: []) == 4)
        #expect(StageThreads.cores(affinity: 4, quotas: ["max 100000"]) == 4)
        // 1.5 cores of quota: two threads (rounded up), under the four CPUs of the mask.
        #expect(StageThreads.cores(affinity: 4, quotas: ["150000 100000"]) == 2)
        // The tightest of the cgroup and its parents wins; never less than one.
        #expect(StageThreads.cores(affinity: 8, quotas: ["max 100000", "300000 100000", "200000 100000"]) == 2)
        #expect(StageThreads.cores(affinity: 2, quotas: ["10000 100000"]) == 1)
        #expect(StageThreads.cores(affinity: 2, quotas: ["garbage", "0 100000"]) == 2)
        #expect(StageThreads.cpuCount(list: "0-3,6,8-9\n") == 7)
        #expect(StageThreads.cpuCount(list: "1") == 1)
        #expect(StageThreads.cpuCount(list: "") == nil && StageThreads.cpuCount(list: "3-1") == nil)
        // This machine: at least one, at most its online CPUs.
        let here = StageThreads.availableCores()
        #expect(here >= 1 && here <= 4096)
    }
}
