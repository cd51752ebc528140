"""A horizontal bar chart written as a PNG with the standard library only (zlib + struct).

    write_bar_chart(path, groups, series, values, reference=1.0)

`groups` are the rows (labels on the left), `series` the bars in each row (one
colour each, in a legend), `values[g][s]` a positive number or None. The axis is
logarithmic (ratios), with a vertical line at `reference`. Text is drawn with a
3x5 pixel font (upper case, digits and a little punctuation), scaled up.
"""
from __future__ import annotations

import math
import struct
import zlib

# 3x5 glyphs: five rows of three bits, top row first.
FONT = {
    "A": "010101111101101", "B": "110101110101110", "C": "011100100100011", "D": "110101101101110",
    "E": "111100110100111", "F": "111100110100100", "G": "011100101101011", "H": "101101111101101",
    "I": "111010010010111", "J": "001001001101010", "K": "101101110101101", "L": "100100100100111",
    "M": "101111111101101", "N": "110101101101101", "O": "010101101101010", "P": "110101110100100",
    "Q": "010101101110011", "R": "110101110101101", "S": "011100010001110", "T": "111010010010010",
    "U": "101101101101111", "V": "101101101101010", "W": "101101111111101", "X": "101101010101101",
    "Y": "101101010010010", "Z": "111001010100111",
    "0": "111101101101111", "1": "010110010010111", "2": "110001010100111", "3": "110001010001110",
    "4": "101101111001001", "5": "111100110001110", "6": "011100111101111", "7": "111001010010010",
    "8": "111101111101111", "9": "111101111001110",
    " ": "000000000000000", "_": "000000000000111", ".": "000000000000010", "-": "000000111000000",
    "/": "001001010100100", "(": "010100100100010", ")": "010001001001010", ":": "000010000010000",
    ",": "000000000010100", "=": "000111000111000", "+": "000010111010000", "?": "110001010000010",
}
SCALE = 2                      # pixels per font pixel
CHAR_W, CHAR_H = 4 * SCALE, 5 * SCALE
PALETTE = [(31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40), (148, 103, 189), (140, 86, 75)]
WHITE, BLACK, GREY, LIGHT = (255, 255, 255), (0, 0, 0), (120, 120, 120), (225, 225, 225)


class Canvas:
    def __init__(self, width: int, height: int):
        self.width, self.height = width, height
        self.pixels = [bytearray(bytes(WHITE) * width) for _ in range(height)]

    def rect(self, x0: int, y0: int, x1: int, y1: int, colour) -> None:
        x0, x1 = max(0, min(x0, x1)), min(self.width, max(x0, x1))
        for y in range(max(0, min(y0, y1)), min(self.height, max(y0, y1))):
            self.pixels[y][3 * x0:3 * x1] = bytes(colour) * (x1 - x0)

    def text(self, x: int, y: int, string: str, colour=BLACK) -> None:
        for i, char in enumerate(string.upper()):
            glyph = FONT.get(char, FONT["?"])
            for bit, on in enumerate(glyph):
                if on == "1":
                    px, py = x + i * CHAR_W + (bit % 3) * SCALE, y + (bit // 3) * SCALE
                    self.rect(px, py, px + SCALE, py + SCALE, colour)

    def png(self) -> bytes:
        def chunk(kind: bytes, data: bytes) -> bytes:
            return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        raw = b"".join(b"\x00" + bytes(row) for row in self.pixels)
        header = struct.pack(">IIBBBBB", self.width, self.height, 8, 2, 0, 0, 0)  # 8-bit RGB
        return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


def text_width(string: str) -> int:
    return len(string) * CHAR_W


def log_axis(values: list[float], reference: float) -> tuple[float, float]:
    """Powers of two around every value and the reference line, with a margin."""
    low = min([reference, *values])
    high = max([reference, *values])
    return 2.0 ** math.floor(math.log2(low) - 0.1), 2.0 ** math.ceil(math.log2(high) + 0.1)


def write_bar_chart(path, groups: list[str], series: list[str], values: list[list[float | None]],
                    title: str = "", reference: float = 1.0) -> None:
    bar, gap, plot_w = 12, 10, 560
    left = 12 + max(text_width(g) for g in groups) + 10
    top = 16 + CHAR_H + 8 + (CHAR_H + 8) * len(series) + 8
    height = top + len(groups) * (len(series) * bar + gap) + 3 * CHAR_H + 16
    canvas = Canvas(left + plot_w + 80, height)
    canvas.text(12, 12, title)
    for s, name in enumerate(series):  # legend
        y = 16 + CHAR_H + 8 + s * (CHAR_H + 8)
        canvas.rect(12, y, 12 + CHAR_H, y + CHAR_H, PALETTE[s % len(PALETTE)])
        canvas.text(12 + CHAR_H + 8, y, name)
    present = [v for row in values for v in row if v]
    low, high = log_axis(present or [reference], reference)
    x_of = lambda v: left + round(plot_w * (math.log2(v) - math.log2(low)) / (math.log2(high) - math.log2(low)))  # noqa: E731
    bottom = top + len(groups) * (len(series) * bar + gap)
    tick = low
    while tick <= high * 1.0001:  # grid lines and labels at powers of two
        canvas.rect(x_of(tick), top - 4, x_of(tick) + 1, bottom, LIGHT)
        label = f"{tick:g}"
        canvas.text(x_of(tick) - text_width(label) // 2, bottom + 6, label, GREY)
        tick *= 2
    for g, name in enumerate(groups):
        y = top + g * (len(series) * bar + gap)
        canvas.text(12, y + (len(series) * bar - CHAR_H) // 2, name)
        for s, value in enumerate(values[g]):
            if value:
                yb = y + s * bar
                canvas.rect(x_of(low), yb + 1, x_of(value), yb + bar - 1, PALETTE[s % len(PALETTE)])
                canvas.text(max(x_of(value), x_of(low)) + 4, yb + (bar - CHAR_H) // 2, f"{value:.2f}", GREY)
    canvas.rect(x_of(reference), top - 4, x_of(reference) + 2, bottom, BLACK)
    axis = "RML TIME / FASTEST FRAMEWORK (LOG SCALE, LEFT OF THE LINE: RML FASTER)"
    canvas.text(left, bottom + 6 + CHAR_H + 8, axis, GREY)
    with open(path, "wb") as out:
        out.write(canvas.png())
