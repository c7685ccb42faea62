"""Prompt templates: ``.user("Tell me about {topic}", params={"topic": "owls"})``, as in Spring AI.

The default syntax is Spring's: ``{name}`` is a parameter and ``{{``/``}}`` are literal braces. A
template is checked against its parameters when it is rendered (for a request: when the request is
built, so a spec can be made before its values are known): a parameter the template names but the
params lack, or one the params give but the template never uses, is a ``ConfigurationError`` that
names both sides. A text given without params is sent as written, braces and all, and costs nothing.

A :class:`TemplateRenderer` is anything with ``render(template, params) -> str``; :class:`JinjaRenderer`
plugs Jinja in (the ``jinja`` extra, imported when first used). The built-in advisors' own prompts
(the structured-output re-ask, the memory summary, the retrieval context) are :class:`PromptTemplate`
values an application can replace.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from .errors import ConfigurationError

if TYPE_CHECKING:
    import jinja2

__all__ = ["BraceRenderer", "JinjaRenderer", "PromptTemplate", "TemplateRenderer", "render_template"]


@runtime_checkable
class TemplateRenderer(Protocol):
    """Turns a template and its parameters into text; raises ``ConfigurationError`` when they do not fit."""

    def render(self, template: str, params: Mapping[str, Any]) -> str: ...


_Parts = tuple[str | tuple[str], ...]
"""A parsed brace template: literal text, and ``(name,)`` for each parameter."""


@functools.lru_cache(maxsize=256)
def _parse(template: str) -> _Parts:
    """``"Hi {name}, {{x}}"`` -> ``("Hi ", ("name",), ", {x}")``; cached, as a request's template repeats."""
    parts: list[str | tuple[str]] = []
    literal: list[str] = []
    i, end = 0, len(template)
    while i < end:
        char = template[i]
        if char in "{}" and template.startswith(char * 2, i):
            literal.append(char)
            i += 2
        elif char == "{":
            close = template.find("}", i + 1)
            name = template[i + 1 : close] if close > 0 else ""
            if not name.isidentifier():
                shown = template[i : close + 1] if close > 0 else template[i : i + 20]
                raise ConfigurationError(
                    f"The template has {shown!r} at position {i}: a parameter is {{name}} with a Python "
                    f"identifier inside; write '{{{{' and '}}}}' for literal braces. Template: {_clip(template)!r}"
                )
            if literal:
                parts.append("".join(literal))
                literal = []
            parts.append((name,))
            i = close + 1
        elif char == "}":
            raise ConfigurationError(
                f"The template has a lone '}}' at position {i}: write '}}}}' for a literal brace. "
                f"Template: {_clip(template)!r}"
            )
        else:
            nxt = min((p for p in (template.find("{", i), template.find("}", i)) if p >= 0), default=end)
            literal.append(template[i:nxt])
            i = nxt
    if literal:
        parts.append("".join(literal))
    return tuple(parts)


def _clip(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_params(names: set[str] | frozenset[str], params: Mapping[str, Any], template: str) -> None:
    """A ``ConfigurationError`` when ``params`` lack a name the template uses or give one it does not."""
    missing = sorted(names - params.keys())
    unused = sorted(set(params) - names)
    if not missing and not unused:
        return
    import difflib

    problems = []
    if missing:
        hints = [f"{name!r} (did you mean {near[0]!r}?)" if (near := difflib.get_close_matches(name, unused, n=1))
                 else repr(name) for name in missing]  # fmt: skip
        problems.append(f"the template needs {', '.join(hints)}, which the params do not give")
    if unused:
        problems.append(f"the params give {', '.join(map(repr, unused))}, which the template does not use")
    raise ConfigurationError(
        f"The template does not fit its params: {'; and '.join(problems)}. "
        f"Template: {_clip(template)!r}; params: {sorted(params)}"
    )


class BraceRenderer:
    """Spring AI's syntax: ``{name}`` for a parameter, ``{{``/``}}`` for literal braces. Values are
    inserted with ``str()``; every parameter must be used and every name given."""

    __slots__ = ()

    def names(self, template: str) -> frozenset[str]:
        """The parameters ``template`` uses."""
        return frozenset(part[0] for part in _parse(template) if isinstance(part, tuple))

    def render(self, template: str, params: Mapping[str, Any]) -> str:
        parts = _parse(template)
        check_params(self.names(template), params, template)
        return "".join(part if isinstance(part, str) else str(params[part[0]]) for part in parts)

    def __repr__(self) -> str:
        return "BraceRenderer()"


DEFAULT_RENDERER = BraceRenderer()


class JinjaRenderer:
    """Jinja templates (``{{ name }}``, loops, filters) in a sandboxed environment, with the same
    check: an undefined name and an unused parameter are errors. Needs the ``jinja`` extra."""

    def __init__(self, environment: jinja2.Environment | None = None) -> None:
        self._environment = environment
        self._cache: dict[str, tuple[Any, frozenset[str]]] = {}

    @property
    def environment(self) -> jinja2.Environment:
        if self._environment is None:
            try:
                import jinja2
                from jinja2.sandbox import SandboxedEnvironment
            except ImportError as exc:  # pragma: no cover - the extra is in dev
                raise ConfigurationError("JinjaRenderer needs Jinja: pip install 'chatclient[jinja]'") from exc
            self._environment = SandboxedEnvironment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
        return self._environment

    def _compiled(self, template: str) -> tuple[Any, frozenset[str]]:
        found = self._cache.get(template)
        if found is None:
            import jinja2
            from jinja2 import meta

            environment = self.environment
            try:
                names = frozenset(meta.find_undeclared_variables(environment.parse(template)))
                found = (environment.from_string(template), names)
            except jinja2.TemplateSyntaxError as exc:
                raise ConfigurationError(
                    f"The Jinja template does not parse: {exc}. Template: {_clip(template)!r}"
                ) from exc
            if len(self._cache) < 256:
                self._cache[template] = found
        return found

    def render(self, template: str, params: Mapping[str, Any]) -> str:
        compiled, names = self._compiled(template)
        check_params(names, params, template)
        return str(compiled.render(**params))

    def __repr__(self) -> str:
        return "JinjaRenderer()"


def render_template(template: str, params: Mapping[str, Any], renderer: TemplateRenderer | None = None) -> str:
    """``template`` with ``params``, by ``renderer`` (Spring's ``{name}`` syntax by default)."""
    if not isinstance(params, Mapping):
        raise ConfigurationError(f"Template params must be a mapping of names to values, got {type(params).__name__}")
    return (renderer or DEFAULT_RENDERER).render(template, params)


@dataclass(frozen=True)
class PromptTemplate:
    """A template with its renderer, for the prompts the built-in advisors write (and yours):
    ``PromptTemplate("Context:\\n{documents}\\n\\n{query}").render(documents=..., query=...)``."""

    template: str
    renderer: TemplateRenderer | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.template, str):
            raise ConfigurationError(f"PromptTemplate takes the template text, got {type(self.template).__name__}")
        if self.renderer is None:
            _parse(self.template)  # a malformed template is an error where it is written

    def render(self, params: Mapping[str, Any] | None = None, /, **values: Any) -> str:
        return render_template(self.template, {**(params or {}), **values}, self.renderer)

    def expecting(self, *names: str) -> PromptTemplate:
        """This template, checked to use exactly ``names`` (the ones its advisor passes): a replacement
        that misses one or adds another is an error when the advisor is built, not at its first call."""
        renderer = self.renderer
        if renderer is None or isinstance(renderer, BraceRenderer):
            try:
                check_params(DEFAULT_RENDERER.names(self.template), dict.fromkeys(names), self.template)
            except ConfigurationError as exc:
                expected = ", ".join("{" + name + "}" for name in names)
                raise ConfigurationError(f"This template is given exactly {expected} by its advisor. {exc}") from exc
        return self

    @classmethod
    def of(cls, template: str | PromptTemplate) -> PromptTemplate:
        """A template from its text, or the template given."""
        return template if isinstance(template, PromptTemplate) else cls(template)
