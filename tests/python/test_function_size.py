"""No C++ function in src/ is longer than 150 lines (issue 32 §2): tools/function_size.py."""

from __future__ import annotations

from pathlib import Path

from tools_testlib import load_tool

REPO = Path(__file__).resolve().parents[2]


def load():
    return load_tool("function_size")


def test_no_function_in_src_is_over_the_limit() -> None:
    fs = load()
    over = [f for f in fs.scan(REPO) if f.lines > fs.LIMIT and f"{f.path}:{f.name}" not in fs.ALLOWED]
    assert over == [], "split these functions (tools/function_size.py): " + ", ".join(
        f"{f.path}:{f.line} {f.name} ({f.lines} lines)" for f in over
    )


def test_the_allow_list_only_names_functions_still_over_the_limit() -> None:
    fs = load()
    over = {f"{f.path}:{f.name}" for f in fs.scan(REPO) if f.lines > fs.LIMIT}
    assert set(fs.ALLOWED) - over == set(), "remove these entries from ALLOWED: they are short now"


def test_the_scanner_measures_functions_and_skips_what_is_not_one(tmp_path: Path) -> None:
    fs = load()
    src = tmp_path / "src" / "x"
    src.mkdir(parents=True)
    (src / "a.cc").write_text(
        "// void commented(int x) {\n"
        "namespace n {\n"
        "constexpr int kTable[] = {1, 2,\n"
        "                          3};\n"
        "struct S {\n"
        "  int f(int a) const {\n"
        "    return a;\n"
        "  }\n"
        "};\n"
        'const char* s = "int g() {";\n'
        "int S::h(int a) {\n"
        "  auto l = [](int b) { return b; };\n"
        "  if (a) {\n"
        '    return l(R"x(})x"[0]);\n'
        "  }\n"
        "  return 0;\n"
        "}\n"
        "}  // namespace n\n",
        encoding="utf-8",
    )
    found = {(f.name, f.line, f.lines) for f in fs.scan(tmp_path)}
    assert found == {("f", 6, 3), ("S::h", 11, 7)}


def test_the_check_fails_on_a_long_function(tmp_path: Path, capsys) -> None:
    fs = load()
    src = tmp_path / "src"
    src.mkdir()
    (src / "long.cc").write_text("void long_one() {\n" + "  x();\n" * 150 + "}\n", encoding="utf-8")
    assert fs.main(["--check", "--root", str(tmp_path)]) == 1
    assert "152  src/long.cc:1  long_one" in capsys.readouterr().out
