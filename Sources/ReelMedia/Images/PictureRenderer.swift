internal import CFFmpeg

/// Turns decoded video frames into upright SDR pictures of one size, for still images (thumbnails,
/// sprite sheets): the steps and parts of an export's `VideoDecodeStage`, in its order — alpha
/// flattened, scaled (`Scaler`, BT.709 limited range, or 10-bit BT.2020 for the tone mapper), tone
/// mapped to SDR by the exports' `ToneMapper` for HLG and PQ sources, then mirrored and rotated by
/// `Rotator` — into 8-bit 4:2:0 frames `ImageEncoder` takes.
///
/// Not `Sendable`: one per reader, on its thread. The tone mapper measures each picture's peak and
/// smooths it over the ones before, so pictures are to be rendered in time order.
final class PictureRenderer {
    /// Output size after orientation; both even.
    let width: Int
    let height: Int
    private let rotation: Int
    private let mirrored: Bool
    private let toneMapper: ToneMapper?
    private var scaler: Scaler?
    private var flattener: AlphaFlattener?
    /// The scaler's output when another step follows it (pre-rotation size).
    private let scaled: Frame?
    /// Tone-mapped, still to be oriented.
    private let mapped: Frame?

    /// `width`×`height` is the size after the quarter turn, if any.
    init(width: Int, height: Int, rotation: Int, mirrored: Bool, toneMapping: ToneMapping?) throws(MediaError) {
        self.width = width
        self.height = height
        self.rotation = rotation
        self.mirrored = mirrored
        toneMapper = try toneMapping.map { mapping throws(MediaError) in try ToneMapper(mapping) }
        let turned = rotation == 90 || rotation == 270
        let (innerWidth, innerHeight) = (Int32(turned ? height : width), Int32(turned ? width : height))
        let reorients = rotation != 0 || mirrored
        if toneMapper != nil {
            scaled = try Frame(width: innerWidth, height: innerHeight, format: ToneMapper.inputFormat)
            mapped =
                reorients ? try Frame(width: innerWidth, height: innerHeight, format: ToneMapper.outputFormat) : nil
        } else {
            scaled = reorients ? try Frame(width: innerWidth, height: innerHeight, format: AV_PIX_FMT_YUV420P) : nil
            mapped = nil
        }
    }

    /// Renders `source` (a decoded frame) into `target`, a writable 8-bit 4:2:0 frame of this
    /// renderer's size.
    func render(_ source: UnsafeMutablePointer<AVFrame>, into target: Frame) throws(MediaError) {
        var frame = source
        if AlphaFlattener.hasAlpha(frame.pointee.format) {
            if flattener == nil { flattener = try AlphaFlattener(background: 0) }
            frame = try flattener!.flatten(frame)
        }
        if scaler == nil || !scaler!.accepts(frame) {
            let (outWidth, outHeight) =
                scaled.map { ($0.pointer.pointee.width, $0.pointer.pointee.height) } ?? (Int32(width), Int32(height))
            scaler = try Scaler(
                from: frame, toWidth: outWidth, height: outHeight,
                format: toneMapper != nil ? ToneMapper.inputFormat : AV_PIX_FMT_YUV420P,
                matrix: toneMapper != nil ? .bt2020 : .bt709, threads: 1)
        }
        try target.makeWritable()
        guard let scaled else {
            try scaler!.scale(frame, into: target.pointer)
            return
        }
        try scaled.makeWritable()
        try scaler!.scale(frame, into: scaled.pointer)
        var oriented = scaled
        if let toneMapper {
            let destination = mapped ?? target
            try destination.makeWritable()
            try toneMapper.map(scaled.pointer, into: destination.pointer)
            oriented = destination
        }
        if oriented !== target {
            try Rotator.rotate(oriented.pointer, into: target.pointer, degrees: rotation, mirrored: mirrored)
        }
    }

    /// A new writable picture of this renderer's size.
    func makePicture() throws(MediaError) -> Frame {
        try Frame(width: Int32(width), height: Int32(height), format: AV_PIX_FMT_YUV420P)
    }

    /// The size a picture of `codedWidth`×`codedHeight` pixels shows at, fitted into `maximum`:
    /// the sample aspect ratio applied first (stretching the width), then the quarter turn when
    /// `rotation` is 90 or 270, then scaled down (never up) to fit inside `maximum` (0 in a
    /// dimension: unbounded) with the aspect kept; both sides rounded to even numbers (4:2:0), at
    /// least 2.
    public static func fittedSize(
        codedWidth: Int, codedHeight: Int, sampleAspect: Rational?, rotation: Int, maximum: (width: Int, height: Int)
    ) -> (width: Int, height: Int) {
        var displayWidth = Double(codedWidth)
        let displayHeight = Double(codedHeight)
        if let sampleAspect, sampleAspect.isValid { displayWidth *= sampleAspect.value }
        var (w, h) = (displayWidth, displayHeight)
        if rotation == 90 || rotation == 270 { (w, h) = (h, w) }
        var scale = 1.0
        if maximum.width > 0 { scale = min(scale, Double(maximum.width) / w) }
        if maximum.height > 0 { scale = min(scale, Double(maximum.height) / h) }
        func even(_ value: Double) -> Int { max(2, Int((value / 2).rounded()) * 2) }
        // Rounding to even may step one pixel past a bound: step back inside it.
        var width = even(w * scale)
        var height = even(h * scale)
        if maximum.width > 0, width > maximum.width { width = max(2, maximum.width & ~1) }
        if maximum.height > 0, height > maximum.height { height = max(2, maximum.height & ~1) }
        return (width, height)
    }
}

/// Pastes pictures of one size into a grid of `columns`×`rows` cells (a sprite sheet), left to right
/// then top to bottom; cells never filled stay black.
final class SheetCanvas {
    let columns: Int
    let rows: Int
    let cellWidth: Int
    let cellHeight: Int
    let picture: Frame
    private(set) var filled = 0

    init(columns: Int, rows: Int, cellWidth: Int, cellHeight: Int) throws(MediaError) {
        self.columns = columns
        self.rows = rows
        self.cellWidth = cellWidth
        self.cellHeight = cellHeight
        picture = try Frame(
            width: Int32(columns * cellWidth), height: Int32(rows * cellHeight), format: AV_PIX_FMT_YUV420P)
        clear()
    }

    var isFull: Bool { filled == columns * rows }
    var isEmpty: Bool { filled == 0 }

    /// Makes every cell black (limited-range Y 16, Cb Cr 128) and the next cell the first.
    func clear() {
        for plane in 0..<3 {
            guard let (bytes, stride) = picture.plane(plane) else { continue }
            let rowCount = Int(picture.pointer.pointee.height) >> (plane == 0 ? 0 : 1)
            bytes.update(repeating: plane == 0 ? 16 : 128, count: stride * rowCount)
        }
        filled = 0
    }

    /// Copies `cell` (8-bit 4:2:0 of the cell size) into the next free cell; returns its top-left corner.
    func add(_ cell: Frame) throws(MediaError) -> (x: Int, y: Int) {
        let x = (filled % columns) * cellWidth
        let y = (filled / columns) * cellHeight
        try picture.makeWritable()
        for plane in 0..<3 {
            guard let (source, sourceStride) = cell.plane(plane), let (target, targetStride) = picture.plane(plane)
            else { throw MediaError(kind: .internalFailure, call: "sheet", message: "a picture lacks plane \(plane)") }
            let shift = plane == 0 ? 0 : 1
            let rowBytes = cellWidth >> shift
            for row in 0..<(cellHeight >> shift) {
                (target + ((y >> shift) + row) * targetStride + (x >> shift)).update(
                    from: source + row * sourceStride, count: rowBytes)
            }
        }
        filled += 1
        return (x, y)
    }
}
