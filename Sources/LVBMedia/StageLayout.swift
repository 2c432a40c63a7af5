/// How the host's picture and its guests' pictures share the canvas.
public enum StageLayout: String, CaseIterable, Sendable {
    /// The host fills the canvas; guests are small tiles stacked upward from the bottom-right corner.
    case pip
    /// Host and guests side by side in equal columns, each centre-cropped to fill its column.
    case split
    /// 2×2 cells: host top-left, guests in reading order, empty cells black.
    case grid
}

/// A rectangle of the canvas in luma pixels; every field is even so the
/// chroma planes map onto it exactly.
public struct StageRect: Equatable, Sendable {
    public var x: Int
    public var y: Int
    public var width: Int
    public var height: Int

    public init(x: Int, y: Int, width: Int, height: Int) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }

    /// Where each participant goes on a `width`×`height` canvas: index 0 is the
    /// host, then the guests in order. `participants` is clamped to 1 host +
    /// MixConstants.maxGuests, so the result may be shorter than asked; odd
    /// canvases are laid out on their even part. Rects stay inside the canvas
    /// and never overlap (pip tiles overlap only the host's full-canvas rect).
    public static func rects(for layout: StageLayout, participants: Int,
                             width: Int, height: Int) -> [StageRect] {
        let count = max(1, min(participants, 1 + MixConstants.maxGuests))
        let w = even(max(0, width)), h = even(max(0, height))
        switch layout {
        case .pip: return pip(count: count, width: w, height: h)
        case .split: return split(count: count, width: w, height: h)
        case .grid: return grid(count: count, width: w, height: h)
        }
    }

    private static func even(_ n: Int) -> Int { n & ~1 }

    private static func pip(count: Int, width w: Int, height h: Int) -> [StageRect] {
        var rects = [StageRect(x: 0, y: 0, width: w, height: h)]
        let tileWidth = even(w / MixConstants.pipTileFraction)
        // Same aspect as the canvas; tileHeight ≤ h/4 because tileWidth ≤ w/4.
        let tileHeight = w > 0 ? even(tileWidth * h / w) : 0
        let margin = even(min(w, h) / MixConstants.pipMarginFraction)
        // Three tiles (≤ 3h/4) and four margins (≤ h/5) always fit the height.
        for i in 0..<(count - 1) {
            let y = h - (i + 1) * (tileHeight + margin)
            rects.append(StageRect(x: w - margin - tileWidth, y: y, width: tileWidth, height: tileHeight))
        }
        return rects
    }

    private static func split(count: Int, width w: Int, height h: Int) -> [StageRect] {
        let column = even(w / count)
        return (0..<count).map { i in
            // The last column takes what rounding left over, so the columns cover the canvas.
            let x = i * column
            return StageRect(x: x, y: 0, width: i == count - 1 ? w - x : column, height: h)
        }
    }

    private static func grid(count: Int, width w: Int, height h: Int) -> [StageRect] {
        let left = even(w / 2), top = even(h / 2)
        let cells = [
            StageRect(x: 0, y: 0, width: left, height: top),
            StageRect(x: left, y: 0, width: w - left, height: top),
            StageRect(x: 0, y: top, width: left, height: h - top),
            StageRect(x: left, y: top, width: w - left, height: h - top),
        ]
        return Array(cells.prefix(count))
    }
}
