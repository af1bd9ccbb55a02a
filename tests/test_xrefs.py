"""Entry text that names another entry becomes a link with its title: `[[slug]]` (checked by
`check`, an unknown one is an error at file:line:col) and a bare known slug in prose."""

from __future__ import annotations

from pathlib import Path

from browser import *  # noqa: F403
from conftest import sample_files, valid_entry, write_tree
from generator.site import markdown as md

TITLES = {"gpu-oom": "GPU OOM", "nccl-hang": "NCCL hang"}


def test_double_brackets_and_bare_slugs_become_title_links_but_not_in_code() -> None:
    html = md.block("See [[nccl-hang]], or gpu-oom if it says so; not `gpu-oom` in code, and not ddp-oom on its own page.")
    out = str(md.link_entries(str(html), {**TITLES, "ddp-oom": "DDP OOM"}, own="ddp-oom"))
    assert '<a class="xref" href="../nccl-hang/">NCCL hang</a>' in out
    assert 'or <a class="xref" href="../gpu-oom/">GPU OOM</a> if' in out
    assert "<code>gpu-oom</code>" in out and "not ddp-oom on its own page" in out
    # not an entry: left as written; a path or a file name is not a mention
    out = str(md.link_entries(str(md.block("pre-allocated, torch/gpu-oom.py and gpu-oom.yaml")), TITLES, own="x"))
    assert 'class="xref"' not in out


def test_check_reports_an_unknown_or_malformed_slug_at_its_line_and_column(run_cli, tmp_path: Path) -> None:
    files = sample_files()
    files["memory/gpu-oom.yaml"] = valid_entry(mechanism="Memory runs out.\n\nSee [[nccl-hnag]] first, then [[Not A Slug]].\n")
    root = write_tree(tmp_path / "entries", files)
    code, out, _ = run_cli("check", "--entries", str(root))
    text = (root / "memory/gpu-oom.yaml").read_text().splitlines()
    line = next(i for i, t in enumerate(text, 1) if "[[nccl-hnag]]" in t)
    col = text[line - 1].index("[[nccl-hnag]]") + 1
    assert code == 1
    assert f"{root}/memory/gpu-oom.yaml:{line}:{col}: error: [[nccl-hnag]]: no entry 'nccl-hnag'; did you mean 'nccl-hang'?" in out
    assert "[[Not A Slug]]: not an entry's slug" in out


def test_a_name_in_brackets_that_is_no_slug_is_reported_on_its_own_and_code_is_not(run_cli, tmp_path: Path) -> None:
    """What an entry's prose writes in [[...]] is checked whatever it is (the parse keeps every
    such name, Head.named, so that a build checks only the entries that name something unknown);
    the same brackets in inline code are no link."""
    files = sample_files()
    files["memory/gpu-oom.yaml"] = {**files["memory/gpu-oom.yaml"], "mechanism": "Memory runs out; see [[CUDA OOM]].\n"}
    files["distributed/nccl-hang.yaml"] = {**files["distributed/nccl-hang.yaml"], "mechanism": "Docker says `capabilities: [[gpu]]` here.\n"}
    root = write_tree(tmp_path / "entries", files)
    code, out, _ = run_cli("check", "--entries", str(root))
    assert code == 1
    assert "memory/gpu-oom.yaml" in out and "[[CUDA OOM]]: not an entry's slug" in out
    assert "[[gpu]]" not in out


def test_the_real_pages_link_the_entries_their_text_names(browser, site_url: str) -> None:
    page = browser.new_page()
    page.goto(site_url + "cuda-out-of-memory/")
    assert "go to CUDA memory fragmentation (reserved but unallocated) instead" in page.locator("main").inner_text()
    page.locator("main a.xref[href='../cuda-memory-fragmentation/']").first.click()
    page.wait_for_url("**/cuda-memory-fragmentation/")
    page.goto(site_url + "nccl-watchdog-timeout/")
    assert "How do I tell it apart from Collective mismatch across ranks" in page.locator("main").inner_text()
    page.close()


def test_from_file_links_open_the_folders_index(browser, real_site: Path) -> None:
    """The README's way to read the site without a server: entry and list pages, linked."""
    page = browser.new_page()
    page.goto((real_site / "index.html").as_uri())
    page.locator("main a[href$='cuda-out-of-memory/index.html']").first.click()
    page.wait_for_url("**/cuda-out-of-memory/index.html")
    assert page.locator("h1").inner_text().strip() == "CUDA out of memory"
    page.locator("main a.xref[href='../cuda-memory-fragmentation/index.html']").first.click()
    page.wait_for_url("**/cuda-memory-fragmentation/index.html")
    assert all(not h.endswith("/") for h in page.eval_on_selector_all("a[href]", "as => as.map(a => a.getAttribute('href'))")
               if not h.startswith(("http:", "https:", "mailto:", "#")))
    page.close()


def test_brackets_in_code_and_in_quoted_errors_are_not_links(tmp_path: Path) -> None:
    # Docker says "capabilities: [[gpu]]"; a tokenizer example writes input_ids=[[1, 5, 130]]; a
    # fingerprint example quotes the error as printed. None of them is a [[slug]].
    from generator.site.build import load_catalog

    files = sample_files()
    files["memory/gpu-oom.yaml"] = valid_entry(
        title="GPU OOM", related=["nccl-hang"],
        mechanism="Docker asks for a device with `capabilities: [[gpu]]`; a batch like `input_ids=[[1, 5, 130]]` or\n\n```\nx = y[[0, 1]]\n```\n\nis data, and [[nccl-hang]] is a link.",
        fingerprints=[{"pattern": "could not select device driver", "strength": "strong",
                       "examples": ['docker: Error response from daemon: could not select device driver "" with capabilities: [[gpu]].']}],
    )
    catalog = load_catalog(write_tree(tmp_path / "entries", files))
    assert catalog.records["gpu-oom"].head.xrefs == ("nccl-hang",)


def test_the_slug_mention_pattern_finds_what_its_backtracking_form_finds() -> None:
    """prose.MENTION_RE's possessive repeats only skip retries that cannot match: the same
    mentions as the plain pattern, on random text over the characters its edges look at."""
    import random
    import re

    from generator.core.prose import MENTION_RE

    plain = re.compile(r"(?<![\w/.-])[a-z0-9]+(?:-[a-z0-9]+)+(?![\w/-]|\.\w)")
    rng = random.Random(20)
    alphabet = "ab9-./_ A\né`["
    for _ in range(20_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 24)))
        assert [m.span() for m in MENTION_RE.finditer(text)] == [m.span() for m in plain.finditer(text)], text
