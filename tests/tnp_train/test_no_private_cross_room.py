"""No room of tnp_train reads another room's private names (issue 29, item 5): an AST scan of
every module for ``obj._name`` reads (not on ``self``/``cls``/``super()``) of a name that the
reading room never defines and another room does (as an attribute, a slot, a function, a class
or a module-level name). A room may read its own private names; a namedtuple's underscored API
(``_fields``, ``_asdict``, ``_replace``, ``_make``, ``_field_defaults``) is public. The
exceptions left are listed below with their reason; a new cross-room read fails the test, and
so does an exception that no longer occurs (remove it from the list)."""
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_import_layers import LAYERS, ROOM  # noqa: E402

# a namedtuple's public API, underscored so as not to clash with its field names
NAMEDTUPLE_API = {"_fields", "_field_defaults", "_asdict", "_replace", "_make"}

# (reading room, attribute) -> why it is read across rooms; none is left (each owner has a
# public name for what other rooms need)
EXCEPTIONS = {}


def _room_of(module, entries):
    for e in entries:
        if module == e or module.startswith(e + "."):
            if e == "tnp_train" and module != "tnp_train":
                continue
            return ROOM.get(e, e)
    return ".".join(module.split(".")[:2])


def cross_room_reads():
    """[(module, line, attribute, reading room, rooms that define it)]."""
    entries = sorted({e for layer in LAYERS for e in layer}, key=len, reverse=True)
    defined, reads = {}, []
    for path in sorted((ROOT / "tnp_train").rglob("*.py")):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        module = module[:-len(".__init__")] if module.endswith(".__init__") else module
        room = _room_of(module, entries)
        names = defined.setdefault(room, set())
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                names.add(node.value)          # __slots__ entries, setattr/getattr names
            elif isinstance(node, ast.ImportFrom):
                names.update(a.asname or a.name for a in node.names)
            if isinstance(node, ast.Attribute):
                if not isinstance(node.ctx, ast.Load):
                    names.add(node.attr)
                elif node.attr.startswith("_") and not node.attr.startswith("__") and \
                        node.attr not in NAMEDTUPLE_API:
                    v = node.value
                    if isinstance(v, ast.Name) and v.id in ("self", "cls"):
                        continue
                    if isinstance(v, ast.Call) and getattr(v.func, "id", None) == "super":
                        continue
                    reads.append((module, node.lineno, node.attr, room))
    out = []
    for module, line, attr, room in reads:
        if attr in defined[room]:
            continue
        owners = sorted(r for r, names in defined.items() if r != room and attr in names)
        if owners:
            out.append((module, line, attr, room, owners))
    return out


def test_no_room_reads_another_rooms_private_names():
    found = cross_room_reads()
    new = [f"{m}:{line} reads {a} (defined in {', '.join(o)})" for m, line, a, r, o in found
           if (r, a) not in EXCEPTIONS]
    assert not new, ("private names of another room read (use or add a public name):\n  "
                     + "\n  ".join(new))
    stale = sorted(set(EXCEPTIONS) - {(r, a) for _, _, a, r, _ in found})
    assert not stale, f"exceptions that no longer occur (remove them): {stale}"


if __name__ == "__main__":
    rows = cross_room_reads()
    for m, line, a, r, o in rows:
        print(f"{m}:{line} {a} <- {', '.join(o)}")
    print(f"{len(rows)} cross-room private reads, {len({(r, a) for _, _, a, r, _ in rows})} "
          f"(room, name) pairs")
