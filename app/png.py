"""Screenshots as PNG files, by Pillow (already installed with matplotlib): (H, W, 3) uint8 arrays,
top row first. Written atomically (a temporary file beside the target, then os.replace), so an
interrupted screenshot never leaves half a file under the name asked for.
"""
import os
from pathlib import Path

import numpy as np
from PIL import Image

from physics.core.files import remove_stale_temporaries, temporary_path


def write_png(path, rgb):
    """Save an (H, W, 3) uint8 image, top row first."""
    rgb = np.asarray(rgb)
    if rgb.ndim != 3 or rgb.shape[2] != 3 or rgb.dtype != np.uint8:
        raise ValueError(f"write_png: expected an (H, W, 3) uint8 array, got shape {rgb.shape} dtype {rgb.dtype}")
    path = Path(path)
    remove_stale_temporaries(path)
    temp = temporary_path(path)
    try:
        with open(temp, "xb") as out:
            Image.fromarray(rgb, "RGB").save(out, format="PNG")
        os.replace(temp, path)
    except FileExistsError:     # the random name is taken: that file is not ours to remove
        raise
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


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
