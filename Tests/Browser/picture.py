"""What the node's synthetic pictures carry, read from a screenshot of the
page's canvas: the host's frame number in the barcode of its top rows and
the link-mic guest's tile (Sources/LVBMedia/SyntheticSource.swift and
StageLayout.swift are the reference)."""

import time

# The barcode: 20 equal cells across the picture in its top 16 rows (of the
# picture's own height): bits 1, 0, 16 data bits (MSB first), an even-parity
# bit over the data bits, then 0. Black < 80, white > 170.
CELLS = 20
DATA_BITS = 16
BARCODE_ROWS = 16
BLACK_BELOW, WHITE_ABOVE = 80, 170

# The pip layout (MixConstants): a guest's tile is a quarter of the width,
# with a margin of a twentieth of the shorter side, in the bottom-right corner.
PIP_TILE_FRACTION = 4
PIP_MARGIN_FRACTION = 20


class Rect:
    def __init__(self, x, y, width, height):
        self.x, self.y, self.width, self.height = x, y, width, height

    def __repr__(self):
        return f"Rect({self.x:.1f}, {self.y:.1f}, {self.width:.1f}x{self.height:.1f})"


def barcode_bits(number):
    value = number & 0xFFFF
    data = [(value >> (DATA_BITS - 1 - i)) & 1 == 1 for i in range(DATA_BITS)]
    parity = sum(data) % 2 == 1
    return [True, False] + data + [parity, False]


def fit_rect(outer, width, height, fit):
    """Where a width × height picture lies in `outer` under CSS `object-fit`."""
    if fit in ("contain", "scale-down", "cover"):
        scale = (max if fit == "cover" else min)(outer.width / width, outer.height / height)
        w, h = width * scale, height * scale
        return Rect(outer.x + (outer.width - w) / 2, outer.y + (outer.height - h) / 2, w, h)
    return Rect(outer.x, outer.y, outer.width, outer.height)


def picture_rect(shot, canvas, source):
    """Where the source picture (width, height) lies in a screenshot of the
    canvas element, `canvas` being (bitmap width, bitmap height, CSS
    object-fit): the bitmap is placed by object-fit, and a bitmap of another
    shape than the picture is taken to letterbox it (contain)."""
    bitmap = fit_rect(Rect(0, 0, shot.width, shot.height), canvas[0], canvas[1], canvas[2])
    if abs(canvas[0] * source[1] - canvas[1] * source[0]) <= max(canvas[0], canvas[1]) // 100 + 2:
        return bitmap
    return fit_rect(bitmap, source[0], source[1], "contain")


def read_frame_number(shot, rect, picture_height):
    """The frame number in the picture's top barcode, or None when unclear.
    `picture_height` is the picture's own height in pixels (the barcode is
    16 of them)."""
    rows = rect.height * BARCODE_ROWS / picture_height
    y0, y1 = rect.y + rows / 4, rect.y + rows * 3 / 4
    cell = rect.width / CELLS
    bits = []
    for i in range(CELLS):
        x0, x1 = rect.x + i * cell + cell / 4, rect.x + (i + 1) * cell - cell / 4
        mean = shot.mean_luma(round(x0), round(y0), max(round(x0) + 1, round(x1)), max(round(y0) + 1, round(y1)))
        if mean > WHITE_ABOVE:
            bits.append(True)
        elif mean < BLACK_BELOW:
            bits.append(False)
        else:
            return None
    value = 0
    for bit in bits[2:2 + DATA_BITS]:
        value = value << 1 | int(bit)
    return value if bits == barcode_bits(value) else None


def pip_tile(rect, source_width, source_height):
    """The first guest's tile in the pip layout, in screenshot pixels."""
    w, h = source_width & ~1, source_height & ~1
    tile_w = (w // PIP_TILE_FRACTION) & ~1
    tile_h = (tile_w * h // w) & ~1
    margin = (min(w, h) // PIP_MARGIN_FRACTION) & ~1
    sx, sy = rect.width / source_width, rect.height / source_height
    return Rect(rect.x + (w - margin - tile_w) * sx, rect.y + (h - tile_h - margin) * sy, tile_w * sx, tile_h * sy)


def tile_luma(shot, tile):
    """Mean luma of the tile's right middle (columns 55–95 %, rows 30–60 %),
    away from its edges and barcode: the host's picture is its dark blue and
    black bars there, a guest's reversed bars are bright (green … white)."""
    return shot.mean_luma(tile.x + tile.width * 0.55, tile.y + tile.height * 0.3,
                          tile.x + tile.width * 0.95, tile.y + tile.height * 0.6)


def _shots(page, shots, interval, read):
    """`read(shot, rect)` of `shots` screenshots of the page's canvas, `interval` s apart."""
    out = []
    for i in range(shots):
        shot = page.screenshot()
        out.append(read(shot))
        if i + 1 < shots:
            time.sleep(interval)
    return out


def frame_numbers(page, size, shots, interval):
    """The host's frame numbers read from screenshots of a studio page's canvas
    showing a `size` (width, height) picture (None where a shot's barcode is unclear)."""
    return _shots(page, shots, interval,
                  lambda shot: read_frame_number(shot, picture_rect(shot, page.canvas_fit(), size), size[1]))


def tile_lumas(page, size, shots, interval):
    """The mean luma of the pip tile in screenshots of a studio page's canvas."""
    return _shots(page, shots, interval,
                  lambda shot: tile_luma(shot, pip_tile(picture_rect(shot, page.canvas_fit(), size), *size)))
