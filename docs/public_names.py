"""A griffe extension for the API reference: public names first, and Sphinx roles as links.

Two things the docstrings need that griffe does not do by itself:

- ``streameval/__init__.py`` re-exports ``evaluate`` from ``streameval/evaluate.py`` (and
  ``accumulate`` likewise). Python binds ``streameval.evaluate`` to the function; griffe's
  static analysis keeps the submodule. For each name in a package's ``__all__`` that griffe
  holds as a submodule while the package imports an object of that name from it, the
  imported object is put back, so that ``::: streameval.evaluate`` documents the function,
  whichever module defines it.
- The docstrings cross-reference with Sphinx roles (``:func:`streameval.accumulate```,
  ``:meth:`~streameval.State.metrics```). Each becomes a link to that object where the
  reference documents it, and plain code where it does not.
"""

from __future__ import annotations

import html
import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:func|meth|mod|class|data|attr|exc|obj):`(~?)([\w.]+)(?:\(\))?`")


def _identifier(name: str, obj: griffe.Object) -> str:
    """The full path a role's target names, read from ``obj``'s module as Sphinx would."""
    if name.startswith("streameval"):
        return name
    module = obj if obj.is_module else obj.module
    if name.startswith("."):
        package = module if module.is_package else module.parent
        return f"{package.path}{name}" if package is not None else name[1:]
    return f"{module.path}.{name}"


def _links(text: str, obj: griffe.Object) -> str:
    def link(match: re.Match[str]) -> str:
        short, name = match.groups()
        shown = name.rsplit(".", 1)[-1] if short else name.lstrip(".")
        target = html.escape(_identifier(name, obj), quote=True)
        code = f"<code>{html.escape(shown)}</code>"
        return f'<autoref identifier="{target}" optional>{code}</autoref>'

    return ROLE.sub(link, text)


def _rewrite(obj: griffe.Object) -> None:
    if obj.docstring is not None:
        obj.docstring.value = _links(obj.docstring.value, obj)
    for member in obj.members.values():
        if not member.is_alias:
            _rewrite(member)  # type: ignore[arg-type]


class PublicNames(griffe.Extension):
    """Public names over same-named submodules, and Sphinx roles as optional links."""

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        """Run once the package and its submodules are loaded."""
        _rewrite(pkg)
        for name in pkg.exports or ():
            name = str(name)
            member = pkg.members.get(name)
            target = pkg.imports.get(name)
            if member is None or not member.is_module or target is None:
                continue
            module_path, _, attribute = target.rpartition(".")
            if module_path != member.path or attribute not in member.members:
                continue
            pkg.set_member(name, griffe.Alias(name, member.members[attribute], parent=pkg))
