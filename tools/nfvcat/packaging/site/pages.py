"""The site's pages, rendered with Jinja2 from nfvcat/data/site-*.html (autoescaped: the catalog's text is data,
never markup); one inline style sheet and, on the index, one inline script for the search."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any

from nfvcat.packaging.site.diagram import legend

if TYPE_CHECKING:
    from nfvcat.catalog.flavors import CatalogFlavor

EntryPage = Any  # nfvcat.packaging.site.EntryPage (the package imports this module: no import back)

STYLE = """
body{font-family:system-ui,sans-serif;margin:0;color:#0f172a;background:#fff;line-height:1.45}
header{background:#0f172a;color:#fff;padding:.6rem 1.2rem}header a{color:#fff;margin-right:1rem}
main{padding:1rem 1.2rem;max-width:78rem}table{border-collapse:collapse;margin:.5rem 0}
th,td{border:1px solid #cbd5e1;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#e2e8f0}code,pre{background:#f1f5f9;font-size:.9em}pre{padding:.5rem;white-space:pre-wrap;overflow-wrap:anywhere}
.placement{overflow-x:auto;border:1px solid #cbd5e1}.nofit{color:#991b1b;font-weight:bold}.why{font-size:.95em}
a{color:#1d4ed8}.deprecated{color:#991b1b;font-weight:bold}.diagram{overflow-x:auto;border:1px solid #cbd5e1}
label{font-weight:bold;margin-right:.5rem}input{font-size:1rem;padding:.2rem .4rem;width:22rem}
"""

SEARCH = """
document.getElementById('q').addEventListener('input', function (ev) {
  var words = ev.target.value.toLowerCase().split(/\\s+/).filter(Boolean);
  var shown = 0;
  document.querySelectorAll('#entries tbody tr').forEach(function (row) {
    var text = row.textContent.toLowerCase();
    var hit = words.every(function (w) { return text.indexOf(w) >= 0; });
    row.hidden = !hit;
    if (hit) { shown += 1; }
  });
  document.getElementById('count').textContent = shown + ' entries shown';
});
"""






@cache
def _env() -> Any:
    from importlib import resources

    import jinja2

    def load(name: str) -> str:
        return resources.files("nfvcat").joinpath(f"data/site-{name}.html").read_text(encoding="utf-8")

    env = jinja2.Environment(loader=jinja2.FunctionLoader(load), autoescape=True, undefined=jinja2.StrictUndefined,
                             keep_trailing_newline=True)
    return env


def index_page(pages: list[EntryPage]) -> str:
    return str(_env().get_template("index").render(title="Catalog", style=STYLE, up="", pages=pages, search=SEARCH))


def entry_page(page: EntryPage, explain: Callable[[str], str]) -> str:
    return str(_env().get_template("entry").render(title=page.entry.name, style=STYLE, up="../", p=page,
                                                    e=page.entry, images=page.images, explain=explain,
                                                    legend=legend()))


def flavors_page(flavors: list[CatalogFlavor], explain: Callable[[str], str]) -> str:
    from nfvcat.catalog.flavors import as_host

    return str(_env().get_template("flavors").render(title="Flavors", style=STYLE, up="", flavors=flavors,
                                                      explain=explain, host=as_host))
