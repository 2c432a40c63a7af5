import LVBMedia

/// Reading a PK's side-by-side pictures: the colour in the middle of each
/// half of every picture a viewer wrote ("R" the red host's BT.601 red,
/// "B" the blue host's blue, "?" neither), as runs.
enum SideBySide {
    /// The colour in the middle of the `width` columns from `x` (a quarter
    /// of that span and of the picture's height in from each edge).
    static func colour(_ f: I420Frame, x: Int, width: Int) -> Character {
        var u = 0, v = 0, n = 0
        for y in (f.height / 4) / 2..<(f.height * 3 / 4) / 2 {
            for cx in (x + width / 4) / 2..<(x + width * 3 / 4) / 2 {
                u += Int(f.u[y * f.chromaStride + cx])
                v += Int(f.v[y * f.chromaStride + cx])
                n += 1
            }
        }
        let (mu, mv) = (Double(u) / Double(n), Double(v) / Double(n))
        if abs(mu - 90) < 30 && abs(mv - 240) < 30 { return "R" }
        if abs(mu - 240) < 30 && abs(mv - 110) < 30 { return "B" }
        return "?"
    }

    /// Each picture of the Y4M at `path` as its left and right halves'
    /// colours, runs of fewer than 3 pictures dropped.
    static func runs(_ path: String) throws -> [String] {
        let reader = try Y4MReader(path: path)
        var states: [String] = []
        while let f = try reader.nextFrame() {
            let half = f.width / 2
            states.append(String([colour(f, x: 0, width: half), colour(f, x: half, width: f.width - half)]))
        }
        return states.reduce(into: [(String, Int)]()) { r, s in
            if r.last?.0 == s { r[r.count - 1].1 += 1 } else { r.append((s, 1)) }
        }.filter { $0.1 >= 3 }.map(\.0)
    }
}
