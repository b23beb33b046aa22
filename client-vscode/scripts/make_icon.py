"""Draws media/icon.png (128x128, the marketplace icon): a white "undo" arrow on a teal rounded
square. Standard library only (zlib + struct), so the icon is reproducible without any download.

Usage: python3 scripts/make_icon.py [OUT]   (default: media/icon.png next to this folder)
"""

import math
import struct
import sys
import zlib
from pathlib import Path

SIZE = 128
SUPERSAMPLE = 4
BACKGROUND = (13, 115, 119)
FOREGROUND = (255, 255, 255)


def in_rounded_square(x: float, y: float, margin: float = 4, radius: float = 24) -> bool:
    """The tile: a square with rounded corners."""
    lo, hi = margin + radius, SIZE - margin - radius
    cx, cy = min(max(x, lo), hi), min(max(y, lo), hi)
    return (x - cx) ** 2 + (y - cy) ** 2 <= radius**2


def in_arrow(x: float, y: float) -> bool:
    """The glyph: a 3/4 ring open at the top left, with an arrow head at its start."""
    cx, cy, r, stroke = 68.0, 70.0, 32.0, 12.0
    dist = math.hypot(x - cx, y - cy)
    angle = math.degrees(math.atan2(y - cy, x - cx)) % 360
    on_ring = abs(dist - r) <= stroke / 2 and not (180 < angle < 255)
    # The head: a triangle pointing left at the ring's end (angle 180, the ring's left side).
    tip, base_x, half = (18.0, 54.0), 50.0, 20.0
    on_head = False
    if tip[0] <= x <= base_x:
        spread = half * (x - tip[0]) / (base_x - tip[0])
        on_head = abs(y - tip[1]) <= spread
    return on_ring or on_head


def pixel(px: int, py: int) -> tuple[int, int, int, int]:
    """Anti-aliased colour of one pixel (SUPERSAMPLE^2 samples)."""
    tile = glyph = 0
    n = SUPERSAMPLE
    for i in range(n):
        for j in range(n):
            x, y = px + (i + 0.5) / n, py + (j + 0.5) / n
            if in_rounded_square(x, y):
                tile += 1
                if in_arrow(x, y - 16):
                    glyph += 1
    total = n * n
    if not tile:
        return (0, 0, 0, 0)
    mix = glyph / tile
    rgb = tuple(round(b + (f - b) * mix) for b, f in zip(BACKGROUND, FOREGROUND, strict=True))
    return (*rgb, round(255 * tile / total))


def png(width: int, height: int, rows: list[bytes]) -> bytes:
    """An RGBA PNG: signature, IHDR, one IDAT, IEND."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)
    raw = b"".join(b"\x00" + row for row in rows)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw, 9))
        + chunk(b"IEND", b"")
    )


def main() -> None:
    default = Path(__file__).parent.parent / "media" / "icon.png"
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else default
    rows = [b"".join(bytes(pixel(x, y)) for x in range(SIZE)) for y in range(SIZE)]
    out.write_bytes(png(SIZE, SIZE, rows))
    print(f"wrote {out} ({SIZE}x{SIZE})")


if __name__ == "__main__":
    main()
