#!/usr/bin/env python3
"""Draws the ten demo digits (0-9) as 28x28 grayscale images in MNIST style
(white strokes on black, 0..255, digit in the central 20x20 box) and writes
them to digits.npy as uint8 [10, 28, 28]. Standard library only.

Each digit is a few pen strokes in a 20x20 box; pixels are shaded by their
distance to the nearest stroke so edges are anti-aliased like MNIST scans."""
import math
import struct


def ellipse(cx, cy, rx, ry, start=0.0, end=360.0, steps=24):
    pts = []
    for i in range(steps + 1):
        a = math.radians(start + (end - start) * i / steps)
        pts.append((cx + rx * math.sin(a), cy - ry * math.cos(a)))
    return pts


STROKES = {
    0: [ellipse(10, 10, 5.5, 8.5)],
    1: [[(7, 4), (10.5, 1), (10.5, 19)]],
    2: [ellipse(10, 5.5, 5, 4.5, -80, 120) + [(4, 19), (16.5, 19)]],
    3: [ellipse(10, 5.5, 5, 4.5, -70, 180), ellipse(10, 14.5, 5.5, 4.5, 0, 250)],
    4: [[(13, 19), (13, 1), (3, 13), (17, 13)]],
    5: [[(15, 1), (5.5, 1), (4.5, 8.5)], ellipse(9.5, 13, 5.5, 5.5, -60, 230)],
    6: [[(14, 1.5), (9, 2.5), (5.5, 7), (4.5, 13)], ellipse(10, 14, 5.5, 5, 0, 360)],
    7: [[(3, 1), (17, 1), (8, 19)]],
    8: [ellipse(10, 5.5, 4.5, 4.5), ellipse(10, 14.5, 5.5, 4.8)],
    9: [ellipse(10, 6, 5, 5), [(15, 6), (14.5, 12), (12, 19)]],
}

PEN_RADIUS = 1.3  # in box units (~1.3 px): MNIST strokes are 2-3 px wide
FEATHER = 0.8


def seg_dist(px, py, a, b):
    (ax, ay), (bx, by) = a, b
    dx, dy = bx - ax, by - ay
    length2 = dx * dx + dy * dy
    t = 0.0 if length2 == 0 else max(0.0, min(1.0, ((px - ax) * dx + (py - ay) * dy) / length2))
    return math.hypot(px - (ax + t * dx), py - (ay + t * dy))


def render(digit):
    img = bytearray(28 * 28)
    for r in range(28):
        for c in range(28):
            # pixel centre in box coordinates (box = pixels 4..24)
            x, y = c + 0.5 - 4, r + 0.5 - 4
            d = min(seg_dist(x, y, p[i], p[i + 1]) for p in STROKES[digit] for i in range(len(p) - 1))
            v = max(0.0, min(1.0, (PEN_RADIUS + FEATHER - d) / FEATHER))
            img[r * 28 + c] = int(round(255 * v))
    return bytes(img)


def write_npy(path, data, shape):
    header = "{'descr': '|u1', 'fortran_order': False, 'shape': %s, }" % (shape,)
    pad = (64 - (10 + len(header) + 1) % 64) % 64
    header = header + " " * pad + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + data)


if __name__ == "__main__":
    images = b"".join(render(d) for d in range(10))
    write_npy("digits.npy", images, (10, 28, 28))
    for d in range(10):
        img = images[d * 784:(d + 1) * 784]
        print("\n".join("".join("#" if img[r * 28 + c] > 128 else ("+" if img[r * 28 + c] else ".") for c in range(28)) for r in range(2, 26, 2)))
        print()
