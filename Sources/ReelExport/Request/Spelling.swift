/// "Did you mean …?" for mistyped names (preset names, manifest and preset-file keys).
package enum Spelling {
    /// The candidate closest to `word` when it is close enough to be a slip (case ignored; an edit
    /// distance of at most 1 for short words, 2 from 5 characters, 3 from 9), else nil.
    package static func closest(to word: String, among candidates: some Sequence<String>) -> String? {
        let typed = Array(word.lowercased())
        let allowed = typed.count >= 9 ? 3 : typed.count >= 5 ? 2 : 1
        var best: (candidate: String, distance: Int)?
        for candidate in candidates {
            let distance = editDistance(typed, Array(candidate.lowercased()))
            if distance <= allowed, distance < (best?.distance ?? Int.max) { best = (candidate, distance) }
        }
        return best?.candidate
    }

    /// ` (did you mean 'x'?)`, or "" when nothing is close.
    package static func suggestion(for word: String, among candidates: some Sequence<String>) -> String {
        closest(to: word, among: candidates).map { " (did you mean '\($0)'?)" } ?? ""
    }

    /// Levenshtein distance (insertions, deletions and substitutions of one character).
    static func editDistance(_ a: [Character], _ b: [Character]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                current[j] = min(
                    previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }
}

/// Finds keys in a decoded JSON object that a `Decodable` type would silently ignore.
package enum StrictKeys {
    /// The keys of `object` not in `known`, each with its path (`prefix.key`) and a suggestion.
    package static func unknown(in object: [String: Any], known: Set<String>, prefix: String = "") -> [String] {
        object.keys.sorted().filter { !known.contains($0) }.map { key in
            "unknown key '\(prefix)\(key)'" + Spelling.suggestion(for: key, among: known.sorted())
        }
    }

    /// The names of a value's stored properties: the keys of its synthesized `Codable` conformance
    /// (optionals included, set or not).
    package static func propertyNames(of value: Any) -> Set<String> {
        Set(Mirror(reflecting: value).children.compactMap(\.label))
    }
}
