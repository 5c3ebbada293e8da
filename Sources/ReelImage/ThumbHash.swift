import Foundation

/// ThumbHash (Evan Wallace's compact placeholder, the one Immich stores): a picture of at most 100x100
/// pixels reduced to about 25 bytes of DCT coefficients, from which a client draws a blurred preview with
/// the right average colour and aspect ratio before the thumbnail arrives. The layout is the reference
/// encoder's, so any ThumbHash decoder reads it: a 24-bit header (luma DC, chroma DCs, luma scale, alpha
/// flag), a 16-bit header (luma AC count on the short side, chroma scales, landscape flag), an alpha byte
/// when the picture has transparency, then 4-bit AC coefficients.
public enum ThumbHash {
    /// The hash of `width` x `height` RGBA pixels (not premultiplied), row by row; nil when the picture is
    /// empty, larger than 100 pixels a side, or `rgba` has not 4 bytes a pixel.
    public static func encode(width: Int, height: Int, rgba: [UInt8]) -> [UInt8]? {
        guard width > 0, height > 0, width <= 100, height <= 100, rgba.count == width * height * 4 else { return nil }
        let count = width * height
        var average = (r: 0.0, g: 0.0, b: 0.0, a: 0.0)
        for index in 0..<count {
            let alpha = Double(rgba[index * 4 + 3]) / 255
            average.r += alpha / 255 * Double(rgba[index * 4])
            average.g += alpha / 255 * Double(rgba[index * 4 + 1])
            average.b += alpha / 255 * Double(rgba[index * 4 + 2])
            average.a += alpha
        }
        if average.a > 0 {
            average.r /= average.a
            average.g /= average.a
            average.b /= average.a
        }
        let hasAlpha = average.a < Double(count)
        let lumaLimit = hasAlpha ? 5.0 : 7.0
        let longest = Double(max(width, height))
        let lx = max(1, Int((lumaLimit * Double(width) / longest).rounded()))
        let ly = max(1, Int((lumaLimit * Double(height) / longest).rounded()))

        // Luminance, yellow-blue and red-green, with transparent pixels blended over the average colour.
        var l = [Double](repeating: 0, count: count)
        var p = l
        var q = l
        var a = l
        for index in 0..<count {
            let alpha = Double(rgba[index * 4 + 3]) / 255
            let r = average.r * (1 - alpha) + alpha / 255 * Double(rgba[index * 4])
            let g = average.g * (1 - alpha) + alpha / 255 * Double(rgba[index * 4 + 1])
            let b = average.b * (1 - alpha) + alpha / 255 * Double(rgba[index * 4 + 2])
            l[index] = (r + g + b) / 3
            p[index] = (r + g) / 2 - b
            q[index] = r - g
            a[index] = alpha
        }

        let luma = channel(l, width, height, max(3, lx), max(3, ly))
        let yellowBlue = channel(p, width, height, 3, 3)
        let redGreen = channel(q, width, height, 3, 3)
        let transparency = hasAlpha ? channel(a, width, height, 5, 5) : nil

        let landscape = width > height
        let header24 =
            round(63 * luma.dc) | round(31.5 + 31.5 * yellowBlue.dc) << 6 | round(31.5 + 31.5 * redGreen.dc) << 12
            | round(31 * luma.scale) << 18 | (hasAlpha ? 1 : 0) << 23
        let header16 =
            (landscape ? ly : lx) | round(63 * yellowBlue.scale) << 3 | round(63 * redGreen.scale) << 9
            | (landscape ? 1 : 0) << 15
        var hash: [UInt8] = [
            UInt8(header24 & 255), UInt8(header24 >> 8 & 255), UInt8(header24 >> 16 & 255), UInt8(header16 & 255),
            UInt8(header16 >> 8 & 255),
        ]
        if let transparency {
            hash.append(UInt8(round(15 * transparency.dc) | round(15 * transparency.scale) << 4))
        }
        let start = hash.count
        var index = 0
        for coefficients in [luma.ac, yellowBlue.ac, redGreen.ac, transparency?.ac ?? []] {
            for value in coefficients {
                let slot = start + index >> 1
                if slot >= hash.count { hash.append(0) }
                hash[slot] |= UInt8(round(15 * value) << ((index & 1) << 2))
                index += 1
            }
        }
        return hash
    }

    /// The average colour a hash encodes (red, green, blue, alpha from 0 to 1), as a decoder reads it from
    /// the header.
    public static func averageColour(_ hash: [UInt8]) -> (red: Double, green: Double, blue: Double, alpha: Double)? {
        guard hash.count >= 5 else { return nil }
        let header = Int(hash[0]) | Int(hash[1]) << 8 | Int(hash[2]) << 16
        let l = Double(header & 63) / 63
        let p = Double(header >> 6 & 63) / 31.5 - 1
        let q = Double(header >> 12 & 63) / 31.5 - 1
        let hasAlpha = header >> 23 != 0
        let alpha = hasAlpha && hash.count > 5 ? Double(hash[5] & 15) / 15 : 1
        let b = l - 2.0 / 3.0 * p
        let r = (3 * l - b + q) / 2
        let g = r - q
        func unit(_ value: Double) -> Double { min(1, max(0, value)) }
        return (unit(r), unit(g), unit(b), alpha)
    }

    /// The width-to-height ratio a hash records (to about one part in seven), as decoders size the
    /// placeholder.
    public static func approximateAspectRatio(_ hash: [UInt8]) -> Double? {
        guard hash.count >= 5 else { return nil }
        let header = Int(hash[3]) | Int(hash[4]) << 8
        let hasAlpha = hash[2] & 0x80 != 0
        let landscape = hash[4] & 0x80 != 0
        let lx = landscape ? (hasAlpha ? 5 : 7) : header & 7
        let ly = landscape ? header & 7 : (hasAlpha ? 5 : 7)
        guard lx > 0, ly > 0 else { return nil }
        return Double(lx) / Double(ly)
    }

    /// DCT of one channel: its DC term, its AC terms normalised to 0...1, and their scale (the largest
    /// magnitude). Terms fill a triangle: cx * ny < nx * (ny - cy).
    private static func channel(_ values: [Double], _ width: Int, _ height: Int, _ nx: Int, _ ny: Int)
        -> (dc: Double, ac: [Double], scale: Double)
    {
        var dc = 0.0
        var ac: [Double] = []
        var scale = 0.0
        var fx = [Double](repeating: 0, count: width)
        for cy in 0..<ny {
            var cx = 0
            while cx * ny < nx * (ny - cy) {
                for x in 0..<width { fx[x] = cos(Double.pi / Double(width) * Double(cx) * (Double(x) + 0.5)) }
                var f = 0.0
                for y in 0..<height {
                    let fy = cos(Double.pi / Double(height) * Double(cy) * (Double(y) + 0.5))
                    let row = y * width
                    for x in 0..<width { f += values[row + x] * fx[x] * fy }
                }
                f /= Double(width * height)
                if cx > 0 || cy > 0 {
                    ac.append(f)
                    scale = max(scale, abs(f))
                } else {
                    dc = f
                }
                cx += 1
            }
        }
        if scale > 0 { ac = ac.map { 0.5 + 0.5 / scale * $0 } }
        return (dc, ac, scale)
    }

    /// JavaScript's Math.round (halves up), as the reference encoder rounds.
    private static func round(_ value: Double) -> Int { Int((value + 0.5).rounded(.down)) }
}
