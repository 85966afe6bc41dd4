"""Copy the book's browser assets from node_modules/ into assets/vendor/ so the built HTML works offline.

The book's pages would otherwise load MathJax from jsdelivr, RequireJS from cdnjs and the ipywidgets HTML manager
from jsdelivr. `make book` installs the exact versions pinned in package-lock.json (`npm ci`) and then runs this
script; Sphinx copies assets/ into the HTML's `_static/` (see `html_static_path` in _config.yml), so the pages load
them as `_static/vendor/...`. assets/vendor/ is git-ignored: it is rebuilt from the registry, never committed.

The folder is deliberately not `_static/`: Jupyter Book adds every `.js` file under a `_static/` folder to every
page, which for MathJax's hundreds of lazily loaded components would break every page.

Usage: python tools/vendor_assets.py [--root DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

# package name -> list of (source relative to the package, destination relative to assets/vendor/)
# A source ending in "/" is a folder copied whole.
COPIES: dict[str, list[tuple[str, str]]] = {
    "mathjax": [
        # The component Sphinx uses by default (TeX and MathML input, CommonHTML output, menu).
        ("es5/tex-mml-chtml.js", "mathjax/tex-mml-chtml.js"),
        # Everything it loads on demand: the TeX extensions ([tex]/...), the output's fonts, the menu, the
        # accessibility components and the speech rule engine the menu's explorer uses.
        ("es5/input/", "mathjax/input/"),
        ("es5/output/chtml.js", "mathjax/output/chtml.js"),
        ("es5/output/chtml/", "mathjax/output/chtml/"),
        ("es5/ui/", "mathjax/ui/"),
        ("es5/a11y/", "mathjax/a11y/"),
        ("es5/sre/", "mathjax/sre/"),
        ("LICENSE", "mathjax/LICENSE"),
    ],
    "requirejs": [
        ("require.js", "requirejs/require.js"),  # MIT, stated in its header
    ],
    "@jupyter-widgets/html-manager": [
        # embed-amd.js defines the widget modules for RequireJS and renders the saved widget state. The font files
        # beside it (Font Awesome, for icons in buttons) are found through window.__jupyter_widgets_assets_path__,
        # which assets/qkv/widgets-config.js sets. Every current browser takes the woff2 or woff file, so the
        # legacy eot/ttf/svg copies are left out.
        ("dist/embed-amd.js", "html-manager/embed-amd.js"),
        ("dist/*.woff2", "html-manager/"),
        ("dist/*.woff", "html-manager/"),
        ("package.json", "html-manager/package.json"),  # its licence (BSD-3-Clause) and version; no LICENSE file
    ],
}


def fail(message: str) -> None:
    print(f"vendor_assets: {message}", file=sys.stderr)
    raise SystemExit(1)


def check_installed(root: Path) -> None:
    """node_modules must hold exactly the versions that package.json pins (a stale install is an error)."""
    pins = json.loads((root / "package.json").read_text(encoding="utf-8"))["dependencies"]
    if sorted(pins) != sorted(COPIES):
        fail(f"package.json pins {sorted(pins)} but this script copies {sorted(COPIES)}; update both together")
    for name, pinned in pins.items():
        manifest = root / "node_modules" / name / "package.json"
        if not manifest.is_file():
            fail(f"{name} is not installed; run `npm ci --ignore-scripts` (or `make book`) in {root}")
        installed = json.loads(manifest.read_text(encoding="utf-8"))["version"]
        if installed != pinned:
            fail(f"node_modules has {name}@{installed} but package.json pins {pinned}; run `npm ci --ignore-scripts`")


def copy_all(root: Path, dest: Path) -> int:
    """Replace dest with fresh copies; return the number of bytes copied."""
    staging = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for name, items in COPIES.items():
        package = root / "node_modules" / name
        for source, target in items:
            if "*" in source:
                matches = sorted(package.glob(source))
                if not matches:
                    fail(f"{name}: nothing matches {source}")
                for path in matches:
                    (staging / target).mkdir(parents=True, exist_ok=True)
                    shutil.copy2(path, staging / target / path.name)
            elif source.endswith("/"):
                if not (package / source).is_dir():
                    fail(f"{name}: missing folder {source}")
                shutil.copytree(package / source, staging / target)
            else:
                if not (package / source).is_file():
                    fail(f"{name}: missing file {source}")
                (staging / target).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(package / source, staging / target)
    shutil.rmtree(dest, ignore_errors=True)
    staging.rename(dest)
    return sum(p.stat().st_size for p in dest.rglob("*") if p.is_file())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--root",
        type=Path,
        default=Path(__file__).resolve().parent.parent,
        help="the repository root (holds package.json and node_modules/)",
    )
    args = parser.parse_args(argv)
    root = args.root.resolve()
    check_installed(root)
    dest = root / "assets" / "vendor"
    size = copy_all(root, dest)
    print(f"vendor_assets: copied {size / 1e6:.1f} MB into {dest.relative_to(root)}/")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
