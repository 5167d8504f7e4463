"""The one error of every reader of a model: `SceneError` names the file, the node or element,
the key and the value, and says why (the TOML loader, the URDF and MJCF importers, mesh files)."""
from physics.core.validation import short_repr


class SceneError(ValueError):
    """A scene file that cannot be loaded; `file`, `node`, `key`, `value` say where and what."""

    def __init__(self, file, node, key, value, reason):
        self.file, self.node, self.key, self.value, self.reason = str(file), node, key, value, reason
        where = [f"{self.file}"]
        if node is not None:
            # a table label ("[world]") or an imported file's element ("<link name='arm'>") is not a node name
            where.append(f"table {node}" if node.startswith("[") else f"element {node}" if node.startswith("<") else f"node {node!r}")
        if key is not None:
            where.append(f"key {key!r}")
        if value is not None:
            where.append(f"value {short_repr(value)}")
        super().__init__(": ".join(where) + f": {reason}")
