import Foundation
import Testing

@testable import ReelLibrary

@Suite("Fetch predicates", .timeLimit(.minutes(10)))
struct FetchTests {
    @Test("PhotoKit's keys parse; bit tests, ranges and lists become SQL with bound parameters only")
    func toSQL() throws {
        let renderer = SQLRenderer(column: { "c_\($0.rawValue)" })
        let predicate = try PredicateParser.parse(
            "(mediaSubtypes & 8) != 0 AND (creationDate >= \"2024-05-01\" OR favorite == YES) AND NOT burstIdentifier IN {'a', 'b'}"
        )
        let fragment = renderer.render(predicate)
        #expect(
            fragment.sql
                == "((c_mediaSubtypes & ?) != ? AND (c_creationDate >= ? OR c_isFavorite = ?) AND NOT (c_burstIdentifier IN (?, ?)))"
        )
        #expect(fragment.arguments.count == 6)
        #expect(fragment.arguments[0] == .integer(8) && fragment.arguments[5] == .string("b"))
        let postgres = SQLRenderer(column: { $0.rawValue }, placeholder: { "$\($0)" }, firstParameter: 3)
        #expect(
            postgres.render(try PredicateParser.parse("duration BETWEEN {1, 2.5}")).sql
                == "(duration >= $3 AND duration <= $4)")
        #expect(
            try PredicateParser.parse("creationDate > CAST(0, \"NSDate\")")
                == .compare(.key(.creationDate), .greater, .date(Date(timeIntervalSinceReferenceDate: 0))))
    }

    @Test("keys PhotoKit does not allow are refused by name; malformed predicates say why")
    func refusals() throws {
        for (text, named) in [
            ("originalFilename == 'a.jpg'", "originalFilename"), ("location != nil", "location"),
            ("playbackStyle == 3", "playbackStyle"), ("mediaType == 2 AND filename == 'x'", "filename"),
        ] {
            #expect {
                try PredicateParser.parse(text)
            } throws: { error in
                (error as? LibraryError)?.message.contains("'\(named)' is not a key PhotoKit allows") == true
            }
        }
        for text in [
            "mediaType ==", "mediaType == 'video'", "creationDate > 5", "(mediaType == 1", "duration LIKE 3",
            "isFavorite == maybe", "mediaType == 1 mediaType == 2",
            String(repeating: "(", count: 100) + "mediaType == 1",
        ] {
            #expect(throws: LibraryError.self, "\(text)") { try PredicateParser.parse(text) }
        }
        #expect(throws: LibraryError.self) { try FetchSort.parse("originalFilename") }
        #expect(try FetchSort.parse("creationDate,desc") == FetchSort(key: .creationDate, ascending: false))
    }
}
