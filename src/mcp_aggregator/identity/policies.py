"""CEL policies: rules that refuse a call, evaluated for every call in the pipeline.

Each rule is a CEL expression (the ``common-expression-language`` package: the Rust ``cel``
interpreter, ~15 µs per evaluation here) over four variables:

* ``client``: ``{name, subject, claims}`` (``name``/``subject`` null when not known);
* ``profile``: the profile's name (``default`` for ``/mcp``);
* ``tool``: ``{name, server, original_name, title, description, annotations}`` where
  ``name`` is the canonical ``server.tool`` and ``annotations`` holds the four hints
  (``readOnlyHint``, ``destructiveHint``, ``idempotentHint``, ``openWorldHint``) as the
  tool declares them, ``false`` when it does not;
* ``arguments``: the call's arguments as the upstream receives them.

A rule that is true denies the call. A rule that fails to evaluate (a missing key, a type
mismatch) denies too: a policy that cannot be read never lets a call through. Rules that
do not read ``arguments`` decide per client and tool alone, so ``tools/list`` leaves out
what they would deny.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from mcp_aggregator.identity.client_identity import ClientIdentity

if TYPE_CHECKING:
    import cel
    import mcp_types as types

VARIABLES: Final = frozenset({"client", "profile", "tool", "arguments"})
HINTS: Final = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")
_UNDEFINED: Final = "Undefined variable or function"


def compile_rule(expression: str) -> cel.Program:
    """The compiled rule; raises ``ValueError`` saying what is wrong with it."""
    return compile_cel(expression, VARIABLES, _PROBE)


def compile_cel(expression: str, variables: frozenset[str], probe: Mapping[str, Any]) -> cel.Program:
    """``expression`` compiled, refused (``ValueError`` saying why) when it does not parse,
    names a variable outside ``variables``, or calls what does not exist; a rule that fails
    only on some data (a missing argument) is left to be decided per call. ``probe`` is a
    sample of the data the rule will see."""
    # Imported on the first rule: the package loads a console toolkit for its own command
    # line, which every configuration without rules (and the CLI) would pay for.
    import cel

    try:
        program = cel.compile(expression)
    except ValueError as exc:
        raise ValueError(f"not a valid CEL expression: {exc}") from None
    unknown = sorted(set(program.variables()) - variables)
    if unknown:
        raise ValueError(f"unknown variable {', '.join(unknown)} (use {', '.join(sorted(variables))})")
    try:
        program.execute(dict(probe))
    except RuntimeError as exc:
        if _UNDEFINED in str(exc):
            raise ValueError(f"{exc}".split(". Check")[0]) from None
    except (KeyError, TypeError, ValueError):
        pass  # depends on the data; decided per call
    return program


_PROBE: Final = {
    "client": {"name": "probe", "subject": None, "claims": {}},
    "profile": "default",
    "tool": {
        "name": "s.t",
        "server": "s",
        "original_name": "t",
        "title": "",
        "description": "",
        "annotations": dict.fromkeys(HINTS, False),
    },
    "arguments": {},
}


def tool_facts(server: str, tool: types.Tool) -> dict[str, Any]:
    """What a rule sees as ``tool``."""
    declared = tool.annotations.model_dump(by_alias=True, exclude_none=True) if tool.annotations else {}
    annotations: dict[str, Any] = dict.fromkeys(HINTS, False)
    annotations.update({k: v for k, v in declared.items() if k in HINTS})
    return {
        "name": f"{server}.{tool.name}",
        "server": server,
        "original_name": tool.name,
        "title": tool.title or "",
        "description": tool.description or "",
        "annotations": annotations,
    }


def client_facts(identity: ClientIdentity) -> dict[str, Any]:
    """What a rule sees as ``client``."""
    return {"name": identity.name, "subject": identity.subject, "claims": dict(identity.claims)}


@dataclass(frozen=True)
class Rule:
    name: str
    program: cel.Program
    message: str | None
    reads_arguments: bool


class Policies:
    """The configured rules, compiled once; those that read ``arguments`` apart."""

    def __init__(self, rules: Sequence[tuple[str, str, str | None]]) -> None:
        compiled = []
        for name, expression, message in rules:
            program = compile_rule(expression)
            compiled.append(Rule(name, program, message, "arguments" in program.variables()))
        self.rules: tuple[Rule, ...] = tuple(compiled)
        self.static_rules = tuple(rule for rule in compiled if not rule.reads_arguments)
        self.argument_rules = tuple(rule for rule in compiled if rule.reads_arguments)

    def __bool__(self) -> bool:
        return bool(self.rules)

    def denial(
        self,
        client: Mapping[str, Any],
        profile: str,
        tool: Mapping[str, Any],
        arguments: Mapping[str, Any] | None,
        *,
        static_only: bool = False,
    ) -> tuple[Rule, str | None] | None:
        """The first rule that denies (with the evaluation error, when that was why), or None.

        ``static_only``: only rules that do not read ``arguments`` (their verdict depends on
        the client, profile and tool alone, so it may be kept)."""
        context = {"client": client, "profile": profile, "tool": tool}
        found = _first_denial(self.static_rules, context)
        if found is not None or static_only or not self.argument_rules:
            return found
        return _first_denial(self.argument_rules, {**context, "arguments": dict(arguments or {})})


def _first_denial(rules: Sequence[Rule], context: Mapping[str, Any]) -> tuple[Rule, str | None] | None:
    for rule in rules:
        try:
            verdict = rule.program.execute(dict(context))
        except (KeyError, TypeError, ValueError, RuntimeError) as exc:
            return rule, str(exc)
        if verdict is True:
            return rule, None
        if verdict is not False:
            return rule, f"the rule gave {verdict!r}, not a boolean"
    return None
