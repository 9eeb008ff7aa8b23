"""Every rule code has one producer (issue 32 §2): tools/rule_codes.py, whose docstring says the
rule; CONTRIBUTING.md's "add a rule code" follows it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tools_testlib import load_tool

REPO = Path(__file__).resolve().parents[2]
RULES = Path("src") / "torchport" / "rules"


def load():
    return load_tool("rule_codes")


def test_every_code_has_one_producer_and_nothing_else_makes_findings() -> None:
    problems = load().check(REPO)
    assert problems == [], "\n".join(str(p) for p in problems)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of the rules' sources, to break."""
    shutil.copytree(REPO / RULES, tmp_path / RULES, ignore=shutil.ignore_patterns("*_test.cc"))
    return tmp_path


def edit(tree: Path, name: str, old: str, new: str) -> None:
    path = tree / RULES / name
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def messages(tree: Path) -> list[str]:
    return [p.what for p in load().check(tree)]


def test_the_copy_is_clean(tree: Path) -> None:
    assert messages(tree) == []


def test_a_code_made_outside_its_producer_fails(tree: Path) -> None:
    # What the rules did before: a family function making the finding itself.
    edit(
        tree,
        "dtypes.cc",
        "void run_dtypes(Context& ctx) {",
        'void run_dtypes(Context& ctx) {\n  ctx.add("TP210", Draft{});',
    )
    assert messages(tree) == ["TP210 outside its producer tp210() and the registry"]


def test_a_finding_assembled_by_hand_fails(tree: Path) -> None:
    edit(
        tree,
        "dtypes.cc",
        "void run_dtypes(Context& ctx) {",
        'void run_dtypes(Context& ctx) {\n  Finding f;\n  f.code = std::string("x");',
    )
    assert messages(tree) == ["a finding made or changed outside its code's producer"]


def test_a_second_producer_or_one_in_another_family_fails(tree: Path) -> None:
    edit(
        tree,
        "env.cc",
        "namespace torchport::rules {\n",
        "namespace torchport::rules {\n"
        'void tp210(Context& ctx, Draft d) { ctx.add("TP210", std::move(d)); }\n',
    )
    assert "TP210: 2 producers (dtypes.cc:" in messages(tree)[-1]


def test_a_read_not_listed_fails(tree: Path) -> None:
    edit(
        tree,
        "env.cc",
        "void run_env(Context& ctx) {",
        "void run_env(Context& ctx) {\n"
        '  if (!ctx.result.findings.empty() && ctx.result.findings[0].code == "TP100") return;',
    )
    assert messages(tree) == ["TP100 outside its producer tp100() and the registry"]


def test_comments_and_the_registry_do_not_count(tree: Path) -> None:
    edit(
        tree,
        "env.cc",
        "void run_env(Context& ctx) {",
        'void run_env(Context& ctx) {  // like "TP100", f.code = x',
    )
    assert messages(tree) == []


def test_a_code_with_no_producer_fails(tree: Path) -> None:
    edit(tree, "dtypes.cc", "void tp210(Context& ctx, Draft d)", "void make_tp210(Context& ctx, Draft d)")
    got = messages(tree)
    assert "TP210: 0 producers (none)" in got


def test_a_finding_changed_after_it_was_made_fails(tree: Path) -> None:
    # What specify_device.cc did before: the drops of its finding set after the producer made it.
    edit(
        tree,
        "specify_device.cc",
        "void run_specify_device(Context& ctx) {",
        "void run_specify_device(Context& ctx) {\n  ctx.result.findings.back().drops = std::nullopt;",
    )
    assert messages(tree) == ["a finding made or changed outside its code's producer"]


@pytest.mark.parametrize(
    "change",
    [
        # What distributed.cc did before: the findings inside a replaced statement erased by the rule.
        "std::erase_if(ctx.result.findings, [](const Finding& f) { return f.begin == 0; });",
        # What insertions.cc did: its finding rotated ahead of another family's.
        "std::rotate(ctx.result.findings.begin(), ctx.result.findings.end() - 1, ctx.result.findings.end());",
        # What custom_args.cc did: another finding's insertion edited in place.
        "for (Finding& f : ctx.result.findings) f.message.clear();",
        "ctx.result.findings.pop_back();",
    ],
)
def test_a_rule_changing_the_findings_already_made_fails(tree: Path, change: str) -> None:
    edit(tree, "env.cc", "void run_env(Context& ctx) {", "void run_env(Context& ctx) {\n  " + change)
    assert messages(tree) == ["findings already made changed outside resolve.cc"]


def test_the_resolver_may_change_them(tree: Path) -> None:
    edit(
        tree,
        "resolve.cc",
        "void settle_incidental(Context& ctx) {",
        "void settle_incidental(Context& ctx) {\n  ctx.result.findings.pop_back();",
    )
    assert messages(tree) == []


def test_a_read_of_another_familys_code_is_no_longer_listed() -> None:
    # cuda_leftover, device_value and insertions read what a code declares (RuleInfo::subject,
    # renames_in_place, fix::Edit::order), not the code.
    assert {f for f, _ in load().READS} == {"other_files.cc"}
