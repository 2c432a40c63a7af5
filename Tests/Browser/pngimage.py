"""PNG screenshots decoded with the standard library only (zlib and the
PNG filters of RFC 2083 §6), read back as luma the way the node's own tests
read I420 frames."""

import struct
import zlib

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# Colour type (RFC 2083 §4.1.1) → bytes per pixel at bit depth 8.
CHANNELS = {0: 1, 2: 3, 4: 2, 6: 4}


class Image:
    """Pixels as RGB, top to bottom. Rows are unfiltered on first use, and
    only down to the lowest row asked for: the filters chain each row to the
    one above, and pure Python takes about a second for a whole 1000×560
    screenshot, while a barcode needs its top twenty rows."""

    def __init__(self, width, height, raw, colour):
        self.width = width
        self.height = height
        self._raw = raw
        self._colour = colour
        self._bpp = CHANNELS[colour]
        self._stride = width * self._bpp
        self._rows = []  # RGB rows decoded so far
        self._previous = bytearray(self._stride)

    def row(self, y):
        """Row y as bytes, width*3 long (R, G, B)."""
        while len(self._rows) <= y:
            start = len(self._rows) * (self._stride + 1)
            line = bytearray(self._raw[start + 1:start + 1 + self._stride])
            line = unfilter(self._raw[start], line, self._previous, self._bpp)
            self._rows.append(to_rgb(line, self._colour))
            self._previous = line
        return self._rows[y]

    def luma(self, x, y):
        """Full-range BT.601 luma of one pixel (0 black … 255 white)."""
        row = self.row(y)
        r, g, b = row[3 * x], row[3 * x + 1], row[3 * x + 2]
        return (299 * r + 587 * g + 114 * b) // 1000

    def mean_luma(self, x0, y0, x1, y1):
        """Mean luma of the rectangle [x0, x1) × [y0, y1), clamped to the image."""
        x0, x1 = max(0, int(x0)), min(self.width, int(x1))
        y0, y1 = max(0, int(y0)), min(self.height, int(y1))
        if x1 <= x0 or y1 <= y0:
            raise ValueError(f"empty rectangle {x0},{y0}..{x1},{y1} in a {self.width}x{self.height} image")
        total = 0
        for y in range(y0, y1):
            row = self.row(y)
            total += 299 * sum(row[3 * x0:3 * x1:3]) + 587 * sum(row[3 * x0 + 1:3 * x1:3]) + 114 * sum(row[3 * x0 + 2:3 * x1:3])
        return total / 1000 / ((x1 - x0) * (y1 - y0))


def decode(data):
    """Decodes an 8-bit, non-interlaced PNG (what Chromium's screenshots are)."""
    if data[:8] != PNG_SIGNATURE:
        raise ValueError("not a PNG")
    pos, idat, header = 8, [], None
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        if pos + 12 + length > len(data):
            raise ValueError(f"PNG chunk {kind!r} runs past the end")
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    if header is None:
        raise ValueError("PNG without IHDR")
    width, height, depth, colour, _, _, interlace = header
    if depth != 8 or colour not in CHANNELS or interlace != 0:
        raise ValueError(f"unsupported PNG: depth {depth}, colour type {colour}, interlace {interlace}")
    raw = zlib.decompress(b"".join(idat))
    if len(raw) != height * (width * CHANNELS[colour] + 1):
        raise ValueError(f"PNG data is {len(raw)} bytes, expected {height * (width * CHANNELS[colour] + 1)}")
    return Image(width, height, raw, colour)


def unfilter(kind, row, prev, bpp):
    """Undoes one scanline's filter (RFC 2083 §6.2–6.6) in place."""
    n = len(row)
    if kind == 0:
        pass
    elif kind == 1:  # Sub
        for i in range(bpp, n):
            row[i] = (row[i] + row[i - bpp]) & 0xFF
    elif kind == 2:  # Up: every byte at once, as one big integer
        row[:] = add_bytes(row, prev)
    elif kind == 3:  # Average
        for i in range(n):
            left = row[i - bpp] if i >= bpp else 0
            row[i] = (row[i] + ((left + prev[i]) >> 1)) & 0xFF
    elif kind == 4:  # Paeth (the hot loop: |p-a| = |b-c|, |p-b| = |a-c|, |p-c| = |a+b-2c|)
        for i in range(min(bpp, n)):
            row[i] = (row[i] + prev[i]) & 0xFF
        for i in range(bpp, n):
            a, b, c = row[i - bpp], prev[i], prev[i - bpp]
            pa, pb = b - c, a - c
            pc = pa + pb
            if pa < 0:
                pa = -pa
            if pb < 0:
                pb = -pb
            if pc < 0:
                pc = -pc
            row[i] = (row[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
    else:
        raise ValueError(f"unknown PNG filter {kind}")
    return row


_masks = {}


def add_bytes(a, b):
    """(a[i] + b[i]) mod 256 for every i, without a Python loop: the 7 low
    bits of each byte are added with no carry out of the byte, the top bit
    by exclusive or."""
    n = len(a)
    if n not in _masks:
        _masks[n] = (int.from_bytes(b"\x7f" * n, "big"), int.from_bytes(b"\x80" * n, "big"))
    low, high = _masks[n]
    x, y = int.from_bytes(a, "big"), int.from_bytes(b, "big")
    return (((x & low) + (y & low)) ^ ((x ^ y) & high)).to_bytes(n, "big")


def to_rgb(row, colour):
    if colour == 2:
        return bytes(row)
    if colour == 6:
        out = bytearray(len(row) // 4 * 3)
        out[0::3], out[1::3], out[2::3] = row[0::4], row[1::4], row[2::4]
        return bytes(out)
    grey = row[0::CHANNELS[colour]]
    out = bytearray(len(grey) * 3)
    out[0::3] = out[1::3] = out[2::3] = grey
    return bytes(out)
