"""Screenshots as PNG files, by Pillow (already installed with matplotlib): (H, W, 3) uint8 arrays,
top row first. Written atomically (a temporary file beside the target, then os.replace), so an
interrupted screenshot never leaves half a file under the name asked for.
"""
import numpy as np
from PIL import Image

from physics.core.files import write_atomically


def write_png(path, rgb):
    """Save an (H, W, 3) uint8 image, top row first."""
    rgb = np.asarray(rgb)
    if rgb.ndim != 3 or rgb.shape[2] != 3 or rgb.dtype != np.uint8:
        raise ValueError(f"write_png: expected an (H, W, 3) uint8 array, got shape {rgb.shape} dtype {rgb.dtype}")
    write_atomically(path, lambda out: Image.fromarray(rgb, "RGB").save(out, format="PNG"))


def read_png(path):
    """Load a PNG as (H, W, 3) uint8 (an alpha channel dropped); ValueError naming the file for
    anything that is not a PNG image."""
    try:
        with Image.open(path) as image:
            if image.format != "PNG":
                raise ValueError(f"read_png: {path} is a {image.format} image, not a PNG")
            return np.asarray(image.convert("RGB")).copy()
    except (OSError, Image.DecompressionBombError) as error:
        raise ValueError(f"read_png: {path} is not a readable PNG ({error})") from None
