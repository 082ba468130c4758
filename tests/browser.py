"""A real headless browser for the tests of the HTML reports: Debian's chromium (``apt-get install chromium``), run
with the flags that work on a machine without network or display (docs/testing.md, "The HTML report").

:func:`screenshot` renders a page to PNG; :func:`probe` loads a copy of the page with a small script appended that
measures it (``document.documentElement.scrollWidth``, each selected element's box, computed colours, line
height, how many lines its text takes and whether it is visible) and reads the answer back from ``--dump-dom``; :func:`read_png` decodes the screenshot (8-bit RGB or RGBA, every PNG filter) with zlib and numpy
only, so that the test can look at its pixels.
"""
from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import tempfile
import zlib
from pathlib import Path

import numpy as np
import pytest

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--hide-scrollbars", "--force-device-scale-factor=1", "--mute-audio",
         "--enable-logging=stderr", "--v=0"]  # the page's console messages (script errors) on stderr
NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def chromium() -> str:
    """The browser's path, or skip the test saying how to get one."""
    for name in NAMES:
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("no headless browser: install Debian's chromium (apt-get install -y chromium) to render the HTML "
                "reports in a real browser")


def _run(args: list[str], timeout: float = 120) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        return subprocess.run([chromium(), *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True,
                              timeout=timeout, stdin=subprocess.DEVNULL, env={**os.environ, "LANG": "C.UTF-8"})


def console_messages(stderr: bytes) -> list[str]:
    """What the page wrote to the browser's console (an uncaught script error among them)."""
    return [line for line in stderr.decode(errors="replace").splitlines() if ":CONSOLE" in line]


def screenshot(page: Path, png: Path, width: int = 1280, height: int = 1000) -> tuple[np.ndarray, list[str]]:
    """``page`` rendered in a ``width`` x ``height`` window, saved as ``png``: the RGB array and the console
    messages."""
    done = _run([f"--window-size={width},{height}", f"--screenshot={png}", page.resolve().as_uri()])
    assert png.is_file(), f"chromium wrote no screenshot (exit {done.returncode}): {done.stderr.decode()[-2000:]}"
    return read_png(png), console_messages(done.stderr)


PROBE = """
<script>
(function () {
  var root = document.documentElement, found = {scrollWidth: root.scrollWidth, clientWidth: root.clientWidth,
    scrollHeight: root.scrollHeight, boxes: {}};
  var wanted = %s;
  Object.keys(wanted).forEach(function (key) {
    found.boxes[key] = Array.prototype.map.call(document.querySelectorAll(wanted[key]), function (el) {
      var r = el.getBoundingClientRect(), style = getComputedStyle(el), range = document.createRange(), tops = {};
      range.selectNodeContents(el);  // the lines its text takes: one distinct top per line box
      Array.prototype.forEach.call(range.getClientRects(), function (b) { if (b.width > 0) tops[Math.round(b.top)] = 1; });
      return {x: r.left + window.scrollX, y: r.top + window.scrollY, width: r.width, height: r.height,
              fill: style.fill, color: style.color, background: style.backgroundColor,
              lineHeight: parseFloat(style.lineHeight) || 1.2 * parseFloat(style.fontSize),
              text: (el.textContent || "").slice(0, 80), lines: Object.keys(tops).length,
              visible: el.checkVisibility ? el.checkVisibility({contentVisibilityAuto: true, opacityProperty: true,
                                                                visibilityProperty: true}) : null};
    });
  });
  var out = document.createElement("script");
  out.type = "application/json"; out.id = "probe-result"; out.textContent = JSON.stringify(found);
  document.body.appendChild(out);
})();
</script>
"""


def probe(page: Path, selectors: dict[str, str], width: int = 1280, height: int = 1000) -> dict:
    """Load ``page`` (a copy, with a measuring script appended) at ``width`` x ``height``: the root's scroll and
    client sizes, for each selector the boxes (page coordinates), computed colours and line heights of its elements,
    and the console messages (``console``)."""
    text = page.read_text()
    probed = page.with_name(page.stem + ".probe.html")
    probed.write_text(text.replace("</body>", PROBE % json.dumps(selectors) + "</body>"))
    done = _run([f"--window-size={width},{height}", "--virtual-time-budget=3000", "--dump-dom", probed.resolve().as_uri()])
    dom = done.stdout.decode()
    start = dom.find('id="probe-result">')
    assert start >= 0, f"the probe did not run (exit {done.returncode}): {done.stderr.decode()[-2000:]}"
    start += len('id="probe-result">')
    found = json.loads(dom[start:dom.index("</script>", start)].replace("&lt;", "<").replace("&gt;", ">")
                       .replace("&amp;", "&"))
    found["console"] = console_messages(done.stderr)
    return found


def read_png(path: Path) -> np.ndarray:
    """An 8-bit, non-interlaced RGB or RGBA PNG as an (height, width, 3) uint8 array."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    pos, chunks, header = 8, [], None
    while pos < len(data):
        size, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + size]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            chunks.append(body)
        pos += 12 + size
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in (2, 6) and not interlace, f"unsupported PNG: {header}"
    channels = 3 if colour == 2 else 4
    stride = width * channels
    raw = np.frombuffer(zlib.decompress(b"".join(chunks)), np.uint8).reshape(height, stride + 1)
    image = np.zeros((height, stride), np.uint8)
    previous = np.zeros(stride, np.uint8)
    for y in range(height):
        kind, line = raw[y, 0], raw[y, 1:]
        if kind == 0:
            row = line.copy()
        elif kind == 1:  # Sub: a running sum per channel, modulo 256
            row = (np.cumsum(line.reshape(width, channels).astype(np.int64), axis=0) % 256).astype(np.uint8).ravel()
        elif kind == 2:  # Up
            row = line + previous
        else:  # Average and Paeth depend on the decoded byte to the left: one byte at a time
            row = _sequential(kind, line.tolist(), previous.tolist(), channels)
        image[y] = row
        previous = image[y]
    return image.reshape(height, width, channels)[:, :, :3]


def _sequential(kind: int, line: list[int], up: list[int], bpp: int) -> np.ndarray:
    out = [0] * len(line)
    for i, value in enumerate(line):
        left = out[i - bpp] if i >= bpp else 0
        if kind == 3:
            out[i] = (value + ((left + up[i]) >> 1)) & 0xFF
            continue
        corner = up[i - bpp] if i >= bpp else 0
        p = left + up[i] - corner
        pa, pb, pc = abs(p - left), abs(p - up[i]), abs(p - corner)
        predictor = left if pa <= pb and pa <= pc else (up[i] if pb <= pc else corner)
        out[i] = (value + predictor) & 0xFF
    return np.array(out, np.uint8)


def hex_rgb(colour: str) -> tuple[int, int, int]:
    """``#rrggbb`` or ``rgb(r, g, b)`` as a tuple."""
    colour = colour.strip()
    if colour.startswith("#"):
        return tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))
    inner = colour[colour.index("(") + 1:colour.index(")")]
    return tuple(int(float(v)) for v in inner.split(",")[:3])


def pixels_of(image: np.ndarray, colour: tuple[int, int, int], tolerance: int = 6) -> np.ndarray:
    """A mask of the pixels within ``tolerance`` of ``colour`` on every channel."""
    return (np.abs(image.astype(np.int16) - np.array(colour, np.int16)) <= tolerance).all(axis=2)


__all__ = ["chromium", "console_messages", "hex_rgb", "pixels_of", "probe", "read_png", "screenshot"]
