import Foundation
import ReelExport
import ReelLibrary
import ReelQueue
import Testing

@testable import reel

/// Error codes, exit statuses and phases are types; these tests keep their strings in those types,
/// and make the documentation's tables of them from the types.
@Suite(.timeLimit(.minutes(1)))
struct CodeTests {
    /// Every code's string and every phase's: each may be spelled out only where its type declares it.
    static let typedStrings = JobError.Code.allCases.map(\.rawValue) + ExportSession.Phase.allCases.map(\.rawValue)

    @Test func noCodeOrPhaseIsSpelledOutsideItsType() throws {
        var found: [String] = []
        // The fleet's schema is frozen text: a migration, once applied, must read the same forever, so the
        // job states its CHECK constraint lists (`cancelled` among them, a code's word too) stay spelled out.
        let frozen: Set<String> = ["Sources/ReelFleet/Schema.swift"]
        for path in Repository.files(under: "Sources", endingIn: ".swift") where !frozen.contains(path) {
            for (number, line) in try Repository.text(path).split(separator: "\n", omittingEmptySubsequences: false)
                .enumerated()
            {
                let code = line.trimmingCharacters(in: .whitespaces)
                if code.hasPrefix("//") { continue }
                // Declarations: a code of its own type (`static let x = Code("…")`), or a case of another
                // enum whose raw value happens to be the same word (`PassthroughObstacle.noVideo`).
                if code.contains("static let ") && code.contains(" = Code(") { continue }
                if code.hasPrefix("case ") && code.contains(" = \"") { continue }
                for string in Self.typedStrings where code.contains("\"\(string)\"") || code.contains("'\(string)'") {
                    found.append("\(path):\(number + 1): \(string)")
                }
            }
        }
        #expect(found.isEmpty, "spelled out instead of named by its type: \(found)")
    }

    /// Every export code has its exit status named (`ExitStatus.ofExportCode`), not left to a default.
    @Test func everyExportCodeHasItsExitStatusNamed() {
        let named = Set(ExitStatus.ofExportCode.keys)
        let missing = ExportError.Code.allCases.filter { !named.contains($0) }.map(\.description)
        #expect(missing.isEmpty, "export codes without an exit status: \(missing)")
    }

    /// The check above finds what it looks for: the declarations themselves are seen.
    @Test func theDeclarationsAreWhereTheCheckLooks() throws {
        let declarations = try Self.codeDeclarations()
        #expect(Set(declarations.map(\.code)) == Set(JobError.Code.allCases.map(\.rawValue)))
    }

    @Test func theErrorCodeTableIsMadeFromTheTypes() throws {
        let meanings = Dictionary(try Self.codeDeclarations().map { ($0.code, $0.meaning) }) { first, _ in first }
        var lines = ["| code | retried | `reel export` exits | meaning |", "| --- | --- | --- | --- |"]
        for code in JobError.Code.allCases {
            let export = ExportError.Code.allCases.first { JobError.Code($0) == code }
            let retried =
                export.map { ExportError($0, "").isRetryable } ?? JobError.requeuedAfterCrash(attempt: 1).retryable
            let exits = export.map { "\(ExitStatus($0).rawValue)" } ?? "–"
            lines.append("| `\(code)` | \(retried ? "yes" : "no") | \(exits) | \(meanings[code.rawValue] ?? "") |")
        }
        try GeneratedBlock(name: "error-codes").check(lines.joined(separator: "\n") + "\n")
    }

    @Test func theExitStatusTableIsMadeFromTheTypes() throws {
        var lines = ["| status | meaning |", "| --- | --- |"]
        for status in ExitStatus.allCases {
            let codes = ExportError.Code.allCases.filter { ExitStatus($0) == status }.map { "`\($0)`" }
            let meaning = codes.isEmpty ? status.meaning : "\(status.meaning); codes \(codes.joined(separator: ", "))"
            lines.append("| \(status.rawValue) | \(meaning) |")
        }
        try GeneratedBlock(name: "exit-statuses").check(lines.joined(separator: "\n") + "\n")
    }

    /// Every library code has its exit status named (`ExitStatus.ofLibraryCode`), not left to a default.
    @Test func everyLibraryCodeHasItsExitStatusNamed() {
        let missing = LibraryError.Code.allCases.filter { ExitStatus.ofLibraryCode[$0] == nil }.map(\.description)
        #expect(missing.isEmpty, "library codes without an exit status: \(missing)")
        #expect(Set(LibraryError.Code.allCases.map(\.description)).count == LibraryError.Code.allCases.count)
    }

    /// The codes `--json` prints for the library's and the queue's own failures, from their types.
    @Test func theCommandCodeTableIsMadeFromTheTypes() throws {
        var lines = ["| from | code in `--json` | retryable | exits | meaning |", "| --- | --- | --- | --- | --- |"]
        let library = Dictionary(
            try Self.declarations(in: "Sources/ReelLibrary/LibraryError.swift", pattern: #/static let (\w+) = Code\(/#)
        ) { first, _ in first }
        // Every code the type declares is listed in `allCases`, which the table is made from.
        #expect(Set(library.keys) == Set(LibraryError.Code.allCases.map(Self.constantName)))
        for code in LibraryError.Code.allCases {
            let name = try #require(library[Self.constantName(code)])
            lines.append(
                "| `reel library` | `\(code.commandCode)` | \(code.retryable ? "yes" : "no") | \(ExitStatus(code).rawValue) | \(name) |"
            )
        }
        let queue = Dictionary(
            try Self.declarations(in: "Sources/ReelQueue/Model/JobStore.swift", pattern: #/case (\w+)$/#)
        ) { first, second in first.isEmpty ? second : first }
        for kind in QueueError.Kind.allCases {
            lines.append(
                "| the queue (`submit`, `status`, `cancel`, …) | `\(kind.code)` | \(kind.retryable ? "yes" : "no") | \(ExitStatus(kind).rawValue) | \(queue["\(kind)"] ?? "") |"
            )
        }
        try GeneratedBlock(name: "command-codes").check(lines.joined(separator: "\n") + "\n")
    }

    /// The name of the static constant that declares `code` (`notFound` for `not-found`).
    static func constantName(_ code: LibraryError.Code) -> String {
        code.description.split(separator: "-").enumerated()
            .map { $0.offset == 0 ? String($0.element) : $0.element.capitalized }.joined()
    }

    /// Declarations in `path` matching `pattern` (its first capture the name), each with its doc comment.
    static func declarations(in path: String, pattern: Regex<(Substring, Substring)>) throws -> [(String, String)] {
        var found: [(String, String)] = []
        var comment: [String] = []
        for line in try Repository.text(path).split(separator: "\n") {
            let code = line.trimmingCharacters(in: .whitespaces)
            if code.hasPrefix("///") {
                comment.append(code.dropFirst(3).trimmingCharacters(in: .whitespaces))
                continue
            }
            defer { comment = [] }
            if let match = code.firstMatch(of: pattern) {
                found.append((String(match.1), comment.joined(separator: " ")))
            }
        }
        return found
    }

    /// The codes as their types declare them, each with its doc comment: `ExportError.Code`'s and the
    /// queue's own in `JobError.Code`.
    static func codeDeclarations() throws -> [(code: String, meaning: String)] {
        try ["Sources/ReelExport/Session/ExportError.swift", "Sources/ReelQueue/Model/Job.swift"].flatMap { path in
            try declarations(in: path, pattern: #/static let `?\w+`? = Code\((?:rawValue: )?"([^"]+)"\)/#)
        }.map { (code: $0.0, meaning: $0.1) }
    }
}
