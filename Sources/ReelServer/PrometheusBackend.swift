import CoreMetrics
import Metrics
import Prometheus
import ReelQueue

/// The Prometheus backend for the metrics Reel records through swift-metrics: one registry per
/// process, bootstrapped once, with histogram buckets chosen for exports (seconds to hours) rather
/// than for web requests.
public enum PrometheusBackend {
    /// Bootstraps swift-metrics with a Prometheus factory on first use; the registry a `/metrics`
    /// endpoint emits.
    public static let registry: PrometheusCollectorRegistry = {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        typealias Names = WorkerMetricNames
        factory.durationHistogramBuckets = [
            Names.exportDuration: [0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600].map {
                .milliseconds($0 * 1000)
            },
            Names.queueWait: [0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600, 14400].map { .milliseconds($0 * 1000) },
        ]
        factory.valueHistogramBuckets = [
            Names.realtimeFactor: [0.1, 0.25, 0.5, 1, 2, 4, 8, 16, 32, 64, 128],
            Names.attempts: [1, 2, 3, 5, 10],
        ]
        MetricsSystem.bootstrap(factory)
        return registry
    }()

    /// Records `reel_build_info{version, commit} 1`.
    public static func recordBuildInfo(version: String, commit: String) {
        let name = MetricNameDescriptor(
            namespace: "reel", metricName: "build", unitName: "info",
            helpText: "The version and commit of the running reel (always 1)")
        registry.makeGauge(descriptor: name, labels: [("version", version), ("commit", commit)]).set(1.0)
    }

    /// The registry's metrics in Prometheus' text format.
    public static func exposition() -> [UInt8] {
        registry.emitToBuffer()
    }
}
