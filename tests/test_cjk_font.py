"""A student's own plot with Chinese labels draws wherever a notebook runs, with no font to install.

The package ships a subset of Noto Sans CJK SC (`src/qkv/fonts/`, cut by `tools/i18n.py diagrams`): the diagrams'
labels and all of GB 2312. The Chinese labs' set-up (`use_language("zh_CN")`) and `import qkv.figures` (every
chapter) make it matplotlib's fallback. Each check runs in a fresh Python, on a machine made to look like Colab: the
fonts matplotlib found on this one are reduced to DejaVu, so a system-wide Noto Sans CJK cannot stand in.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from fontTools.ttLib import TTFont

from qkv import figures, i18n

ROOT = Path(__file__).resolve().parents[1]
# Common words a student might put on a plot; the test checks that most of them are in no diagram label, so only
# the broad subset can draw them.
TITLE = "我家小猫爱吃鱼，每天早晨跑步喝茶看书"  # a student's own words, none from the course's labels
NO_CJK_FONTS = (
    "from matplotlib import font_manager\n"
    "font_manager.fontManager.ttflist = [f for f in font_manager.fontManager.ttflist if f.name.startswith('DejaVu')]\n"
)
PLOT = f"""
import warnings
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0], label="验证集准确率")
    ax.set_title({TITLE!r})
    ax.legend()
    fig.savefig(__import__("io").BytesIO(), format="png")
print("WARNINGS", [str(w.message) for w in caught])
"""


def chinese_lab_setup() -> str:
    """The code cell of a generated Chinese lab that sets its language, as the student runs it."""
    cells = json.loads((ROOT / "labs" / "zh" / "soft_lookup" / "soft_lookup.ipynb").read_text())["cells"]
    (setup,) = [c for c in cells if c["cell_type"] == "code" and "use_language(" in "".join(c["source"])]
    return "".join(setup["source"])


def warnings_of(code: str) -> list[str]:
    result = subprocess.run(
        [sys.executable, "-c", NO_CJK_FONTS + code + PLOT], capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr[-2000:]
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("WARNINGS")]
    return eval(line[len("WARNINGS ") :])  # a list literal printed by the child


def test_the_title_needs_more_than_the_diagrams_characters():
    catalog = i18n.load_catalog(i18n.catalog_path(ROOT, "zh_CN", "diagrams"))
    labels = "".join(str(m.string) for m in catalog if m.id)
    new = {c for c in TITLE if "\u4e00" <= c <= "\u9fff" and c not in labels}
    assert len(new) >= 10, new


def test_a_chinese_labs_set_up_then_a_plot_in_chinese_gives_no_missing_glyph():
    assert "use_language(" in chinese_lab_setup()
    caught = warnings_of(chinese_lab_setup())
    assert not [w for w in caught if "missing from font" in w], caught


def test_a_chapter_that_imports_qkv_figures_draws_chinese_too():
    caught = warnings_of("import qkv.figures\n")
    assert not [w for w in caught if "missing from font" in w], caught


def test_without_the_course_font_the_same_plot_misses_glyphs():
    """The check can fail: plain matplotlib on a machine without CJK fonts warns for every Chinese character."""
    caught = warnings_of("")
    assert [w for w in caught if "missing from font" in w], caught


def test_the_font_draws_all_of_gb2312_and_has_a_family_of_its_own():
    level_1 = "".join(
        bytes([row, cell]).decode("gb2312")
        for row in range(0xB0, 0xD8)
        for cell in range(0xA1, 0xFF)
        if (row, cell) < (0xD7, 0xFA)
    )  # level 1 ends at D7F9
    level_2 = "".join(
        c
        for row in range(0xD8, 0xF8)
        for cell in range(0xA1, 0xFF)
        for c in [bytes([row, cell]).decode("gb2312", "ignore")]
    )
    font = TTFont(figures.CJK_FONT)
    cmap = font.getBestCmap()
    assert len(level_1) == 3755 and len(level_2) == 3008
    assert not [c for c in level_1 + level_2 if ord(c) not in cmap]
    assert font["name"].getDebugName(1) == figures.CJK_FAMILY != "Noto Sans CJK SC"
    assert figures.CJK_FONT.stat().st_size < 2_000_000  # the wheel stays small
