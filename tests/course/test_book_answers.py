"""The book never shows a function that an assignment asks learners to write.

Every function defined in a solution cell of ``solutions/`` is an answer, a *target*. Its reference
implementations are the solution's own code and any function or method of the same name in
``src/tinydynamo`` outside the course package (the code that the target replaces in the pipeline).
The book may explain a target with prose, figures, pseudocode and the reference's outputs, but:

* no run of three consecutive non-trivial lines of a reference implementation appears in the
  book's Markdown (prose and code cells) or in what it includes with ``literalinclude`` (the whole
  file, a ``:pyobject:``, ``:lines:``, or ``:start-after:``/``:end-before:`` region);
* no code cell prints a target's source (``inspect.getsource`` and friends).
"""
import ast
import functools
import json
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).parents[2]
NOTEBOOKS = sorted((ROOT / "solutions").glob("*/*.ipynb"))
CHAPTERS = sorted((ROOT / "book").glob("*.md"))
SOURCE = ROOT / "src" / "tinydynamo"
RUN = 3  # consecutive non-trivial lines that make a copy


def solution_sources(notebook):
    return ["".join(cell["source"]) for cell in json.loads(notebook.read_text())["cells"]
            if cell.get("metadata", {}).get("nbgrader", {}).get("solution")]


def functions(tree):
    return [node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]


def answers(notebook):
    """Names of the functions defined in the notebook's solution cells."""
    return {fn.name for source in solution_sources(notebook) for fn in functions(ast.parse(source))}


def body_lines(source_lines, fn):
    """The function's lines (of the module's ``source_lines``) without its docstring."""
    lines = source_lines[fn.lineno - 1: fn.end_lineno]
    doc = fn.body[0] if fn.body and isinstance(fn.body[0], ast.Expr) and isinstance(
        getattr(fn.body[0], "value", None), ast.Constant) and isinstance(fn.body[0].value.value, str) else None
    if doc is not None:
        del lines[doc.lineno - fn.lineno: doc.end_lineno - fn.lineno + 1]
    return lines


@functools.cache
def src_functions():
    """(file, name, lines) of every function and method in src/tinydynamo outside the course package."""
    found = []
    for path in sorted(SOURCE.rglob("*.py")):
        if "course" not in path.relative_to(SOURCE).parts:
            text = path.read_text()
            lines = text.splitlines()
            where = str(path.relative_to(ROOT))
            found += [(where, fn.name, body_lines(lines, fn)) for fn in functions(ast.parse(text))]
    return found


def references(notebook):
    """target name -> [(where, lines)] of each of its reference implementations."""
    names, found = answers(notebook), {}
    for source in solution_sources(notebook):
        for fn in functions(ast.parse(source)):
            origin = f"{notebook.parent.name}'s solution"
            found.setdefault(fn.name, []).append((origin, body_lines(source.splitlines(), fn)))
    for path, name, lines in src_functions():
        if name in names:
            found[name].append((path, lines))
    return found


def normalized(line):
    return " ".join(line.split())


def nontrivial(lines):
    """The lines that say something: at least three words, not a comment or a marker."""
    kept = (normalized(line) for line in lines)
    return [line for line in kept if len(re.findall(r"\w+", line)) >= 3 and not line.startswith(("#", "//"))]


def runs(lines):
    nontrivial_lines = nontrivial(lines)
    return {tuple(nontrivial_lines[i:i + RUN]) for i in range(len(nontrivial_lines) - RUN + 1)}


# --------------------------------------------------------------------------- what the book shows

DIRECTIVE = re.compile(r"```\{literalinclude\}\s*(\S+)\s*\n((?::[\w-]+:.*\n)*)")


def included_region(text, options):
    """The part of an included file's text that a literalinclude's options select."""
    if "pyobject" in options:
        *owners, name = options["pyobject"].split(".")
        tree = ast.parse(text)
        for owner in owners:
            tree = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == owner)
        node = next(n for n in tree.body if getattr(n, "name", None) == name)
        return ast.get_source_segment(text, node)
    if "start-after" in options:
        text = text.split(options["start-after"].strip("\"'"), 1)[1]
    if "end-before" in options:
        text = text.split(options["end-before"].strip("\"'"), 1)[0]
    if "lines" in options:
        lines = text.splitlines()
        chosen = []
        for part in options["lines"].split(","):
            start, _, end = part.partition("-")
            chosen += lines[int(start) - 1: int(end or start) if end or not _ else None]
        text = "\n".join(chosen)
    return text


def shown(chapter):
    """[(where, lines)]: the chapter's own Markdown, and each region it includes."""
    text = chapter.read_text()
    regions = [(chapter.name, text.splitlines())]
    for match in DIRECTIVE.finditer(text):
        options = dict(re.findall(r":([\w-]+):\s*(.*)", match.group(2)))
        path = (chapter.parent / match.group(1)).resolve()
        where = f"{chapter.name} includes {match.group(1)} {' '.join(f':{k}: {v}' for k, v in options.items())}"
        regions.append((where, included_region(path.read_text(), options).splitlines()))
    return regions


@functools.cache
def book_runs():
    """[(where, runs)] for every region of every chapter."""
    return [(where, runs(lines)) for chapter in CHAPTERS for where, lines in shown(chapter)]


CODE_CELL = re.compile(r"```\{code-cell\}[^\n]*\n(.*?)```", re.S)
PRINTS_SOURCE = re.compile(r"(?:getsource|getsourcelines|getsourcefile|getlines)\s*\(([^)]*)\)")


def test_there_are_answers_to_look_for():
    assert len(NOTEBOOKS) >= 9 and all(answers(nb) for nb in NOTEBOOKS)


def test_the_checker_finds_a_copy():
    reference = ["def f(x):", "    total = compute(x, 1)", "    more = compute(total, 2)", "    return total + more"]
    book = ["Some prose.", "```python", "total = compute(x, 1)", "", "more = compute(total, 2)",
            "return total + more", "```"]
    assert runs(reference) & runs(book)
    assert not runs(reference) & runs(book[:5])


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda nb: nb.parent.name)
def test_book_does_not_show_an_answer(notebook):
    copies = []
    for name, implementations in sorted(references(notebook).items()):
        for origin, lines in implementations:
            for where, book in book_runs():
                common = runs(lines) & book
                if common:
                    copies.append(f"{where} shows {name} ({origin}):\n      " + "\n      ".join(min(common)))
    assert not copies, f"{notebook.parent.name} asks learners to write these:\n  " + "\n  ".join(copies)


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda nb: nb.parent.name)
def test_book_does_not_print_an_answer(notebook):
    names = answers(notebook)
    printed = [f"{chapter.name}: {call.group(0)}" for chapter in CHAPTERS
               for cell in CODE_CELL.findall(chapter.read_text()) for call in PRINTS_SOURCE.finditer(cell)
               if set(re.findall(r"\w+", call.group(1))) & names]
    assert not printed, f"{notebook.parent.name} asks learners to write these: " + "; ".join(printed)
