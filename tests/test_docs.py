"""Every code block of README.md and docs/*.md runs, and shows what it prints.

The fence's info string says what a block is:

- ```` ```python ```` runs. The ``python`` blocks of one markdown file run in order in one
  namespace, like the cells of a notebook (a later block may use names an earlier one defined),
  in a fresh subprocess whose working directory is a temporary folder (blocks may write files),
  on the CPU (``TNP_BACKEND=numpy``). A failure names the file and the block's first line, and
  the traceback shows the markdown's own lines.
- ```` ```py ```` is a fragment that is not run, only compiled (``compile()``), so it is at least
  valid Python. Keep these few and say why in the text around them: GPU-only code, ``mpiexec``,
  a long training run (``make demo``'s 30 epochs).
- ```` ```bash ````, ```` ```sh ````, ```` ```console ````, ```` ```text ```` and bare
  ```` ``` ```` fences are not Python and are not run.

Any other info string fails, so a typo (```` ```pyhton ````) cannot make a block silently skip.

Inside a ``python`` block, a comment at the end of a line shows a result, and is checked:

- after a ``print(...)`` call (at any depth; every such call must run at least once): the
  printed text;
- after a top-level expression statement, when the comment is a Python expression with more
  in it than names and commas (a literal, a call, brackets): the value's ``repr``; when it
  reads ``SomeError: text``: the statement raises ``SomeError`` (or a subclass) with ``text``
  in its message.

Comment lines right below, with their ``#`` in the same column, continue the shown result.
Whitespace is compared loosely (any run of it is one space), so a long result may be wrapped.
After a ``print`` call, prose belongs on a line of its own.
"""
import ast
import builtins
import io
import os
import re
import subprocess
import sys
import tokenize
import traceback
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

RUN, COMPILE = "python", "py"
NOT_PYTHON = {"bash", "sh", "console", "text", ""}
TIMEOUT_S = 120        # per markdown file; all of them together take well under a minute

_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,})(?P<info>[^`]*)$")
_ERROR = re.compile(r"^([A-Za-z_]\w*(?:Error|Exception)): (.*)$", re.S)


def extract_blocks(text):
    """The fenced code blocks of a markdown text: ``(language, first_code_line, code)``, in order.

    ``first_code_line`` is 1-based. Raises ValueError on a fence that is never closed.
    """
    blocks, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        lang = m["info"].strip().split(" ", 1)[0] if m["info"].strip() else ""
        fence, indent, start, body = m["fence"], len(m["indent"]), i + 1, []
        i += 1
        while i < len(lines) and not re.match(rf"^ {{0,3}}{fence}`*\s*$", lines[i]):
            # CommonMark: a fence indented by n spaces takes up to n off each line of its block
            body.append(re.sub(rf"^ {{0,{indent}}}", "", lines[i]) if indent else lines[i])
            i += 1
        if i == len(lines):
            raise ValueError(f"line {start}: the ``` fence opened here is never closed")
        blocks.append((lang, start + 1, "\n".join(body) + "\n"))
        i += 1
    return blocks


def _name(path):
    """The path relative to the checkout (``docs/data.md``), else the file's name."""
    path = Path(path)
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name


def _norm(text):
    return " ".join(text.split())


def _shown_results(source):
    """line -> the result shown by the comment that ends that line (with its continuations)."""
    comments = {}                         # line -> (column, text, the line holds only a comment)
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            (row, col), line = tok.start, tok.line
            comments[row] = (col, tok.string[1:], not line[:col].strip())
    shown = {}
    for row, (col, text, alone) in comments.items():
        if alone:
            continue
        parts, nxt = [text], row + 1
        while nxt in comments and comments[nxt][2] and comments[nxt][0] == col:
            parts.append(comments[nxt][1])
            nxt += 1
        shown[row] = "\n".join(parts)
    return shown


def _is_result(comment):
    """Whether a comment shows a value: a Python expression with more in it than names and
    commas (``# scale, gradient, unscale, apply`` parses as a tuple of names and is prose)."""
    try:
        tree = ast.parse(comment.strip(), mode="eval")
    except SyntaxError:
        return False
    names_only = (ast.Expression, ast.Tuple, ast.Name, ast.Attribute, ast.Load)
    return not all(isinstance(node, names_only) for node in ast.walk(tree))


def _is_print(node):
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "print")


class DocBlockError(Exception):
    """A python block of a markdown file failed; the message names the file and the line."""


def run_markdown(path):
    """Run the python blocks of the markdown file `path` in one namespace; check shown results."""
    path = Path(path).resolve()
    filename, name = str(path), _name(path)
    namespace = {"__name__": "__main__"}
    print_spans = {}                      # (first line, last line) of a print call -> shown text
    printed = set()

    def shown_print(*args, **kwargs):
        if kwargs.get("file") not in (None, sys.stdout):
            return builtins.print(*args, **kwargs)
        frame = sys._getframe(1)
        spans = [s for s in print_spans if frame.f_code.co_filename == filename
                 and s[0] <= frame.f_lineno <= s[1]]
        buf = io.StringIO()
        builtins.print(*args, **{**kwargs, "file": buf})
        sys.stdout.write(buf.getvalue())
        if spans:
            span = min(spans, key=lambda s: s[1] - s[0])      # the innermost print call
            printed.add(span)
            if _norm(buf.getvalue()) != _norm(print_spans[span]):
                raise AssertionError(f"{name}:{span[1]}: the doc shows\n    "
                                     f"{print_spans[span].strip()!r}\nbut this prints\n    "
                                     f"{buf.getvalue().strip()!r}")

    namespace["print"] = shown_print
    blocks = [(line, code) for lang, line, code in
              extract_blocks(path.read_text(encoding="utf-8")) if lang == RUN]
    for first, code in blocks:
        source = "\n" * (first - 1) + code          # the markdown's line numbers
        try:
            tree = ast.parse(source, filename)
            shown = _shown_results(source)
            for node in ast.walk(tree):
                if _is_print(node) and node.end_lineno in shown:
                    print_spans[(node.lineno, node.end_lineno)] = shown[node.end_lineno]
            for stmt in tree.body:
                _run_statement(stmt, shown.get(stmt.end_lineno), namespace, path)
        except BaseException as exc:
            sys.stdout.flush()
            tb = exc.__traceback__            # start the traceback in the markdown, not here
            while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
                tb = tb.tb_next
            raise DocBlockError(f"{name}:{first}: the python block starting here failed:\n"
                                + "".join(traceback.format_exception(type(exc), exc, tb))) from None
    never = sorted(s[1] for s in print_spans if s not in printed)
    if never:
        raise DocBlockError(f"{name}: the print calls whose output is shown at lines "
                            f"{never} never ran")


def _run_statement(stmt, shown, namespace, path):
    name = _name(path)
    if not (isinstance(stmt, ast.Expr) and shown is not None and not _is_print(stmt.value)):
        exec(compile(ast.Module([stmt], type_ignores=[]), str(path), "exec"), namespace)
        return
    expression = compile(ast.Expression(stmt.value), str(path), "eval")
    error = _ERROR.match(_norm(shown))
    if error:
        try:
            eval(expression, namespace)
        except Exception as exc:
            if (error[1] in {c.__name__ for c in type(exc).__mro__}
                    and _norm(error[2]) in _norm(str(exc))):
                return
            raise AssertionError(f"{name}:{stmt.lineno}: the doc shows {_norm(shown)!r}, "
                                 f"but this raised {type(exc).__name__}: {exc}") from exc
        raise AssertionError(f"{name}:{stmt.lineno}: the doc shows {_norm(shown)!r}, "
                             "but this raised nothing")
    value = eval(expression, namespace)
    if not _is_result(shown):
        return
    if _norm(repr(value)) != _norm(shown):
        raise AssertionError(f"{name}:{stmt.lineno}: the doc shows\n    {shown.strip()!r}\n"
                             f"but the value is\n    {repr(value)!r}")


# --- the tests ---------------------------------------------------------------------------------

def _docs_with(lang):
    return [pytest.param(p, id=_name(p)) for p in DOCS
            if any(b[0] == lang for b in extract_blocks(p.read_text(encoding="utf-8")))]


def test_the_docs_are_found():
    names = {_name(p) for p in DOCS}
    assert {"README.md", "docs/index.md", "docs/training.md"} <= names, names


@pytest.mark.parametrize("path", [pytest.param(p, id=_name(p)) for p in DOCS])
def test_every_fence_says_what_it_is(path):
    known = {RUN, COMPILE} | NOT_PYTHON
    bad = [f"{_name(path)}:{line}: ```{lang}" for lang, line, _ in
           extract_blocks(path.read_text(encoding="utf-8")) if lang not in known]
    assert not bad, ("unknown fence info strings (python runs, py compiles, "
                     f"{sorted(NOT_PYTHON - {''})} are not Python):\n" + "\n".join(bad))


@pytest.mark.parametrize("path", _docs_with(COMPILE))
def test_py_fragments_compile(path):
    for lang, line, code in extract_blocks(path.read_text(encoding="utf-8")):
        if lang == COMPILE:
            compile("\n" * (line - 1) + code, _name(path), "exec")


@pytest.mark.parametrize("path", _docs_with(RUN))
def test_python_blocks_run(path, tmp_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["TNP_BACKEND"] = "numpy"
    env["MPLBACKEND"] = "Agg"
    env.pop("PYTHONWARNINGS", None)
    # run this file's __main__ in the child the way runpy does, so that sys.path starts with the
    # (empty) working directory as in a user's session, not with tests/ and its tnp/ folder
    boot = ("import runpy, sys; sys.argv = sys.argv[1:]; "
            "runpy.run_path(sys.argv[0], run_name='__main__')")
    proc = subprocess.run([sys.executable, "-c", boot, __file__, str(path)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=TIMEOUT_S)
    if proc.returncode != 0:
        pytest.fail(f"{_name(path)}: a python block failed\n--- stdout (tail)\n"
                    f"{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-6000:]}", pytrace=False)


# --- the checker itself -------------------------------------------------------------------------

def test_extract_blocks_reads_fences_and_line_numbers():
    text = "intro\n```python\nx = 1\n\ny = 2\n```\ntext\n  ```py\n  f(\n  ```\n````\n```\n````\n"
    assert extract_blocks(text) == [("python", 3, "x = 1\n\ny = 2\n"), ("py", 9, "f(\n"),
                                    ("", 12, "```\n")]
    with pytest.raises(ValueError, match="line 2"):
        extract_blocks("a\n```python\nx = 1\n")


def _run_md(tmp_path, monkeypatch, body):
    monkeypatch.chdir(tmp_path)
    md = tmp_path / "page.md"
    md.write_text("# page\n\n" + body, encoding="utf-8")
    run_markdown(md)


_GOOD = """\
```python
import numpy as np
x = np.arange(3)
def show(v):
    print(v * 2)           # [0 2 4]
```
text
```python
show(x)
x.sum()                    # np.int64(3)
print(x.reshape(3, 1))     # [[0]
                           #  [1]
                           #  [2]]
x + np.ones(2)             # ValueError: could not be broadcast together
x.sum()                    # the total (prose, not checked)
x.sum()                    # total, sum
print("a")
# a comment on its own line is prose
```
"""


def test_blocks_share_a_namespace_and_shown_results_are_checked(tmp_path, monkeypatch, capsys):
    _run_md(tmp_path, monkeypatch, _GOOD)
    assert capsys.readouterr().out == "[0 2 4]\n[[0]\n [1]\n [2]]\na\n"


@pytest.mark.parametrize("wrong, message", [
    ("print(x.sum())  # 4", r"page.md:5: the doc shows\s+'4'\s+but this prints\s+'3'"),
    ("x.sum()  # np.int64(4)", r"page.md:5: the doc shows\s+'np.int64\(4\)'\s+but the value is"),
    ("x + np.ones(2)  # TypeError: broadcast", r"page.md:5: .* but this raised ValueError"),
    ("x + 1  # ValueError: broadcast", r"page.md:5: .* but this raised nothing"),
    ("def f():\n    print(1)  # 1", r"page.md: the print calls whose output is shown at lines "
                                    r"\[6\] never ran"),
    ("y = undefined_name", r"page.md:4: the python block starting here failed"),
])
def test_a_wrong_shown_result_fails_naming_the_line(tmp_path, monkeypatch, wrong, message):
    with pytest.raises(DocBlockError, match=message):
        _run_md(tmp_path, monkeypatch,
                f"```python\nimport numpy as np; x = np.arange(3)\n{wrong}\n```\n")


if __name__ == "__main__":
    try:
        run_markdown(sys.argv[1])
    except DocBlockError as exc:
        sys.stdout.flush()
        print(exc, file=sys.stderr)
        sys.exit(1)
