"""The report as one page to look at: `reports/<suite>/index.html`.

Built by the report stage from the same Markdown it writes to `tables/` (results.md and each
paper's section), so the page and the tables never disagree; figures are `<img>` tags linked
relatively (`figures/...`, siblings of the page), so the folder opens anywhere as it is, in a
browser or from DVC's cache. Markdown -> HTML is markdown-it-py (CommonMark with tables);
raw HTML in the Markdown is escaped, not passed through.
"""

import html
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from markdown_it import MarkdownIt

STYLE = """
body { font-family: system-ui, sans-serif; max-width: 1200px; margin: 2em auto;
       padding: 0 1em; color: #222; line-height: 1.45; }
nav ul { columns: 2; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; }
th { background: #f2f2f2; }
tbody tr:nth-child(even) { background: #fafafa; }
figure { margin: 1em 0; }
figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { font-size: 0.85em; color: #555; }
code { background: #f4f4f4; padding: 0 0.2em; }
section { border-top: 2px solid #ddd; margin-top: 2em; }
"""


@dataclass(frozen=True)
class Section:
    """One part of the page: a title, its Markdown (tables and text) and its figures, as
    paths relative to the page."""

    title: str
    markdown: str
    figures: Sequence[str] = field(default_factory=tuple)

    @property
    def anchor(self) -> str:
        return "".join(c if c.isalnum() else "-" for c in self.title.lower()).strip("-")


def _markdown() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": False}).enable("table")


def _figure(src: str) -> str:
    name = html.escape(src)
    return (f'<figure><a href="{name}"><img src="{name}" alt="{name}" loading="lazy"></a>'
            f"<figcaption>{name}</figcaption></figure>")


def render(title: str, sections: Sequence[Section]) -> str:
    """The whole page: a table of contents, then each section's tables and figures."""
    md = _markdown()
    toc = "".join(f'<li><a href="#{s.anchor}">{html.escape(s.title)}</a></li>'
                  for s in sections)
    body = []
    for s in sections:
        figures = "".join(_figure(src) for src in s.figures)
        body.append(f'<section id="{s.anchor}"><h1>{html.escape(s.title)}</h1>\n'
                    f"{md.render(s.markdown)}{figures}</section>")
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f"<title>{html.escape(title)}</title><style>{STYLE}</style></head>\n"
            f"<body><h1>{html.escape(title)}</h1><nav><ul>{toc}</ul></nav>\n"
            + "\n".join(body) + "\n</body></html>\n")


def strip_heading(markdown: str) -> str:
    """The Markdown without its first line when that is a level-1 heading (the page gives
    each section its own)."""
    first, _, rest = markdown.partition("\n")
    return rest.lstrip("\n") if first.startswith("# ") else markdown


def relative(paths: Sequence[Path], base: Path) -> list[str]:
    return [p.relative_to(base).as_posix() for p in paths]
