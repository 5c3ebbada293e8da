import Foundation

/// How an edited photo's files find their original, as an iPhone export or Image Capture lays them
/// out (`PHOTO-NOTES.md` §5): beside `IMG_1234.HEIC` (the original, `photo`), `IMG_E1234.HEIC` or
/// `.JPG`/`.JPEG` (the rendered edit, `fullSizePhoto`), `IMG_1234.AAE` (the adjustment data, a
/// property list, `adjustmentData`) and, for an edited Live Photo, `IMG_E1234.MOV`
/// (`fullSizePairedVideo`). Names compare case-insensitively; the edit's name puts an `E` after the
/// original's last `_` when digits follow it (`PXL_20231001_123456` → `PXL_20231001_E123456`).
///
/// An edit's files join the image asset whose primary file is in the same folder with the original's
/// stem. Without one they are files of their own: a rendered edit or movie is an asset, an AAE
/// stays a file. The scan decides from a folder's listing and the store, never from the order it
/// read files in.
public enum EditLayout {
    /// What a file is in the layout.
    public enum Role: Sendable, Equatable {
        /// Not an edit's file (an original, or any other file).
        case original
        /// `IMG_E1234.HEIC|JPG|JPEG`.
        case renderedPhoto
        /// `IMG_E1234.MOV`.
        case renderedMovie
        /// `IMG_1234.AAE`.
        case adjustmentData
    }

    static let renderedPhotoExtensions: Set<String> = ["heic", "heif", "jpg", "jpeg"]
    static let renderedMovieExtensions: Set<String> = ["mov"]

    /// The role of the file named `name` and the original's stem (lowercased) it belongs to.
    public static func role(ofName name: String) -> (role: Role, stem: String) {
        let stem = PathParts.stem(ofName: name)
        let ext = PathParts.pathExtension(ofName: name).lowercased()
        if ext == "aae" { return (.adjustmentData, stem.lowercased()) }
        if let original = originalStem(ofEdited: stem) {
            if renderedPhotoExtensions.contains(ext) { return (.renderedPhoto, original.lowercased()) }
            if renderedMovieExtensions.contains(ext) { return (.renderedMovie, original.lowercased()) }
        }
        return (.original, LivePhotoRules.stem(of: name))
    }

    /// `IMG_1234` for `IMG_E1234` (an `E` after the last `_`, then digits only); nil for any other stem.
    public static func originalStem(ofEdited stem: String) -> String? {
        guard let underscore = stem.lastIndex(of: "_") else { return nil }
        let tail = stem[stem.index(after: underscore)...]
        guard let first = tail.first, first == "E" || first == "e" else { return nil }
        let digits = tail.dropFirst()
        guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return String(stem[...underscore]) + digits
    }

    /// `IMG_E1234` for `IMG_1234`; nil when the stem does not end in `_` and digits.
    public static func editedStem(ofOriginal stem: String) -> String? {
        guard let underscore = stem.lastIndex(of: "_") else { return nil }
        let digits = stem[stem.index(after: underscore)...]
        guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return String(stem[...underscore]) + "E" + digits
    }

    /// A folder and an original's stem (lowercased): the key of one edit's files.
    struct Key: Hashable, Comparable {
        var folder: String
        var stem: String
        static func < (a: Key, b: Key) -> Bool { (a.folder, a.stem) < (b.folder, b.stem) }
    }

    /// The edit's files a folder's listing holds, by original stem: only stems with at least one
    /// rendered edit, movie or AAE are kept.
    struct Listing {
        var renderedPhotos: [String: [String]] = [:]
        var renderedMovies: [String: [String]] = [:]
        var adjustmentData: [String: [String]] = [:]
        /// Stems with a name that may be an original photo (any other extension than the edit's).
        var originals: Set<String> = []

        init(names: [String]) {
            var originalStems = Set<String>()
            for name in names.sorted() {
                let (role, stem) = EditLayout.role(ofName: name)
                switch role {
                case .renderedPhoto: renderedPhotos[stem, default: []].append(name)
                case .renderedMovie: renderedMovies[stem, default: []].append(name)
                case .adjustmentData: adjustmentData[stem, default: []].append(name)
                case .original:
                    if !FileInspector.videoExtensions.contains(PathParts.pathExtension(ofName: name).lowercased()) {
                        originalStems.insert(PathParts.stem(ofName: name).lowercased())
                    }
                }
            }
            originals = originalStems
        }

        var isEmpty: Bool { renderedPhotos.isEmpty && renderedMovies.isEmpty && adjustmentData.isEmpty }

        /// Whether `stem` has any of an edit's files here.
        func hasEdit(_ stem: String) -> Bool {
            renderedPhotos[stem] != nil || renderedMovies[stem] != nil || adjustmentData[stem] != nil
        }

        /// Whether a rendered edit or movie named `name` waits for its original here (it is then not
        /// made an asset of its own when read).
        func holdsBack(_ name: String) -> Bool {
            let (role, stem) = EditLayout.role(ofName: name)
            return (role == .renderedPhoto || role == .renderedMovie) && originals.contains(stem)
        }
    }
}
