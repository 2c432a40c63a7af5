import TestAssertions
import Testing
@testable import LVBMedia

@Suite("Video compositor")
struct VideoCompositorTests {
    static let (width, height) = (640, 360)

    /// A frame whose luma is a smooth diagonal ramp (so misplacement or a wrong
    /// crop shows in PSNR) and whose chroma is one colour.
    static func picture(width: Int, height: Int, u: UInt8, v: UInt8, lumaBase: Int = 30) -> I420Frame {
        let cw = (width + 1) / 2, ch = (height + 1) / 2
        var y = [UInt8](repeating: 0, count: width * height)
        for row in 0..<height {
            for col in 0..<width {
                y[row * width + col] = UInt8(lumaBase + (col * 100 / width) + (row * 60 / height))
            }
        }
        return I420Frame(uncheckedWidth: width, height: height, y: y,
                         u: [UInt8](repeating: u, count: cw * ch), v: [UInt8](repeating: v, count: cw * ch))
    }

    /// The planes of `rect` of `frame`, as a frame of its own.
    static func region(_ frame: I420Frame, _ rect: StageRect) -> I420Frame {
        let (cs, cx, cy, cw, ch) = (frame.chromaStride, rect.x / 2, rect.y / 2, rect.width / 2, rect.height / 2)
        let y = (0..<rect.height).flatMap { r in frame.y[((rect.y + r) * frame.width + rect.x)...].prefix(rect.width) }
        let u = (0..<ch).flatMap { r in frame.u[((cy + r) * cs + cx)...].prefix(cw) }
        let v = (0..<ch).flatMap { r in frame.v[((cy + r) * cs + cx)...].prefix(cw) }
        return I420Frame(uncheckedWidth: rect.width, height: rect.height, y: y, u: u, v: v)
    }

    /// What `source` should look like in `rect`: its centre, cut to the rect's
    /// aspect (computed here independently, in floating point), then scaled.
    static func expected(_ source: I420Frame, in rect: StageRect) throws -> I420Frame {
        let aspect = Double(rect.width) / Double(rect.height)
        var cropW = Double(source.width), cropH = Double(source.height)
        if cropW / cropH > aspect { cropW = cropH * aspect } else { cropH = cropW / aspect }
        let w = Int(cropW.rounded()) & ~1, h = Int(cropH.rounded()) & ~1
        let crop = StageRect(x: ((source.width - w) / 2) & ~1, y: ((source.height - h) / 2) & ~1, width: w, height: h)
        return try region(source, crop).scaled(width: rect.width, height: rect.height)
    }

    static let guestColours: [(u: UInt8, v: UInt8)] = [(40, 200), (200, 60), (90, 90)]

    @Test("Each layout with 1 to 3 guests puts every guest in its rect and the host where it belongs",
          arguments: StageLayout.allCases, 1...3)
    func layouts(layout: StageLayout, guestCount: Int) throws {
        let host = Self.picture(width: Self.width, height: Self.height, u: 128, v: 128, lumaBase: 60)
        // Guests of other sizes and aspects: scaled down, scaled up, cropped.
        let sizes = [(320, 180), (480, 640), (1280, 720)]
        let guests = (0..<guestCount).map { i in
            Self.picture(width: sizes[i].0, height: sizes[i].1, u: Self.guestColours[i].u, v: Self.guestColours[i].v)
        }
        let out = try VideoCompositor().compose(host: host, guests: guests, layout: layout)
        #expect(out.width == Self.width && out.height == Self.height)
        let rects = StageRect.rects(for: layout, participants: 1 + guestCount, width: Self.width, height: Self.height)
        #expect(rects.count == 1 + guestCount)

        for (i, guest) in guests.enumerated() {
            let rect = rects[i + 1]
            let got = Self.region(out, rect)
            let psnr = got.psnr(to: try Self.expected(guest, in: rect))
            #expect(psnr >= 35, "\(layout) guest \(i) in \(rect): \(psnr) dB")
            // Within 1: libyuv's box filter divides by a truncated reciprocal (3:1 turns 200 into 199).
            let (u, v) = (Int(Self.guestColours[i].u), Int(Self.guestColours[i].v))
            #expect(got.u.allSatisfy { abs(Int($0) - u) <= 1 } && got.v.allSatisfy { abs(Int($0) - v) <= 1 },
                    "\(layout) guest \(i) chroma \(Set(got.u)) \(Set(got.v))")
        }
        switch layout {
        case .pip:
            // Outside the tiles the host's picture is untouched, in luma and chroma.
            let tiles = rects.dropFirst()
            func inTile(_ x: Int, _ y: Int) -> Bool {
                tiles.contains { x >= $0.x && x < $0.x + $0.width && y >= $0.y && y < $0.y + $0.height }
            }
            var differing = 0
            for y in 0..<Self.height {
                for x in 0..<Self.width where !inTile(x, y) && out.y[y * Self.width + x] != host.y[y * Self.width + x] {
                    differing += 1
                }
            }
            for y in 0..<(Self.height / 2) {
                for x in 0..<(Self.width / 2) where !inTile(2 * x, 2 * y) {
                    let i = y * out.chromaStride + x
                    if out.u[i] != host.u[i] || out.v[i] != host.v[i] { differing += 1 }
                }
            }
            #expect(differing == 0)
        case .split, .grid:
            let psnr = Self.region(out, rects[0]).psnr(to: try Self.expected(host, in: rects[0]))
            #expect(psnr >= 35, "\(layout) host in \(rects[0]): \(psnr) dB")
            let cells = StageRect.rects(for: .grid, participants: 4, width: Self.width, height: Self.height)
            if layout == .grid {
                for cell in cells.dropFirst(rects.count) { #expect(Self.isBlack(Self.region(out, cell))) }
            }
        }
    }

    static func isBlack(_ frame: I420Frame) -> Bool {
        frame.y.allSatisfy { $0 == MixConstants.blackLuma }
            && (frame.u + frame.v).allSatisfy { $0 == MixConstants.neutralChroma }
    }

    @Test("A guest without a picture yet is a black tile", arguments: StageLayout.allCases)
    func nilGuestIsBlack(layout: StageLayout) throws {
        let host = Self.picture(width: Self.width, height: Self.height, u: 100, v: 150)
        let guest = Self.picture(width: 320, height: 180, u: 40, v: 200)
        let out = try VideoCompositor().compose(host: host, guests: [guest, nil], layout: layout)
        let rects = StageRect.rects(for: layout, participants: 3, width: Self.width, height: Self.height)
        #expect(Self.isBlack(Self.region(out, rects[2])))
        #expect(!Self.isBlack(Self.region(out, rects[1])))
    }

    @Test("Rects are even, inside the canvas, and do not overlap; split columns cover the canvas",
          arguments: [(640, 360), (360, 640), (1920, 1080), (16, 16), (4096, 16), (17, 33), (0, 0)])
    func rectGeometry(size: (Int, Int)) {
        let (w, h) = size
        for layout in StageLayout.allCases {
            for participants in 0...6 {
                let rects = StageRect.rects(for: layout, participants: participants, width: w, height: h)
                #expect(rects.count == max(1, min(participants, 4)))
                for r in rects {
                    #expect([r.x, r.y, r.width, r.height].allSatisfy { $0 >= 0 && $0 % 2 == 0 }, "\(layout) \(r)")
                    #expect(r.x + r.width <= w && r.y + r.height <= h, "\(layout) \(r) outside \(w)x\(h)")
                }
                // pip tiles overlap the host by design, never each other.
                let disjoint = layout == .pip ? Array(rects.dropFirst()) : rects
                for (i, a) in disjoint.enumerated() {
                    for b in disjoint.dropFirst(i + 1) {
                        let apart = a.x + a.width <= b.x || b.x + b.width <= a.x
                            || a.y + a.height <= b.y || b.y + b.height <= a.y
                        #expect(apart || a.width == 0 || a.height == 0 || b.width == 0 || b.height == 0,
                                "\(layout) \(a) overlaps \(b)")
                    }
                }
                if layout == .split {
                    #expect(rects.reduce(0) { $0 + $1.width } == w & ~1)
                }
            }
        }
    }

    @Test("pip tiles sit in the bottom-right corner, a quarter of the width, in the canvas's aspect")
    func pipPlacement() {
        let rects = StageRect.rects(for: .pip, participants: 4, width: 1280, height: 720)
        #expect(rects[0] == StageRect(x: 0, y: 0, width: 1280, height: 720))
        let margin = 1280 - rects[1].x - rects[1].width
        #expect(margin > 0 && 720 - rects[1].y - rects[1].height == margin)
        for tile in rects.dropFirst() {
            #expect(tile.width == 320 && tile.height == 180 && tile.x == rects[1].x)
        }
        #expect(rects[2].y + rects[2].height + margin == rects[1].y)
        #expect(rects[3].y + rects[3].height + margin == rects[2].y)
    }

    @Test("Odd, tiny or inconsistent frames are refused or drawn without a crash")
    func oddSizes() throws {
        let compositor = VideoCompositor()
        let odd = Self.picture(width: 33, height: 17, u: 1, v: 2)
        let isInvalid: (MediaError) -> Bool = { if case .invalidParameter = $0 { true } else { false } }
        expectError("odd host", isInvalid) { () throws(MediaError) in
            try compositor.compose(host: odd, guests: [], layout: .pip)
        }
        expectError("tiny host", isInvalid) { () throws(MediaError) in
            try compositor.compose(host: Self.picture(width: 8, height: 8, u: 1, v: 2), guests: [], layout: .grid)
        }
        var broken = Self.picture(width: 64, height: 64, u: 1, v: 2)
        broken.u.removeLast()
        let host = Self.picture(width: 16, height: 16, u: 128, v: 128)
        expectError("short chroma plane", isInvalid) { () throws(MediaError) in
            try compositor.compose(host: host, guests: [broken], layout: .split)
        }
        // Odd-sized and one-pixel guests (a decoder may give either) on the smallest canvas.
        let guests: [I420Frame?] = [odd, Self.picture(width: 1, height: 1, u: 9, v: 9), Self.picture(width: 4095, height: 3, u: 5, v: 5)]
        for layout in StageLayout.allCases {
            let out = try compositor.compose(host: host, guests: guests, layout: layout)
            #expect(out.width == 16 && out.height == 16)
        }
        // More guests than the layout shows: the extra one is not drawn.
        let crowded = try compositor.compose(host: host, guests: guests + [odd], layout: .grid)
        #expect(crowded.width == 16)
    }

    @Test("An output kept by the caller is not overwritten by the next compose")
    func outputsAreValues() throws {
        let compositor = VideoCompositor()
        let host = Self.picture(width: Self.width, height: Self.height, u: 128, v: 128)
        let first = try compositor.compose(host: host, guests: [Self.picture(width: 320, height: 180, u: 40, v: 200)], layout: .pip)
        let copy = first
        _ = try compositor.compose(host: host, guests: [nil], layout: .pip)
        #expect(first == copy)
        let tile = StageRect.rects(for: .pip, participants: 2, width: Self.width, height: Self.height)[1]
        #expect(Self.region(first, tile).u.allSatisfy { $0 == 40 })
    }
}
