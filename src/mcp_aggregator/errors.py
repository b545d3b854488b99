"""The one error tree of mcp-aggregator.

Every error the gateway raises on purpose derives from ``AggregatorError``. Lower-level
errors (SDK, transport, database) are mapped at the boundary with ``raise X from exc``;
only ``serve/`` turns these into JSON-RPC errors and only ``admin/`` into HTTP codes.

    AggregatorError
    ├── ConfigError                  invalid configuration; message names the field path
    │   ├── EnvVarError              ${VAR} unset at connect time (server + field named)
    │   └── MissingExtraError        a feature configured whose optional packages are not
    │                                installed: names the extra to install
    ├── RegistryError
    │   ├── ServerExistsError        409: "Server already exists: {name}"
    │   ├── ServerNotFoundError      404
    │   └── LimitExceededError       422 on registration, refusal on discovery
    ├── StateError
    │   ├── IllegalTransitionError   a bug: the state machine refuses the pair
    │   └── ServerUnavailableError   503: server not CONNECTED/DEGRADED (state named)
    ├── RoutingError
    │   ├── ToolNotFoundError        404
    │   ├── PromptNotFoundError      404
    │   ├── ResourceNotFoundError    404
    │   ├── TaskNotFoundError        a task id no upstream of this gateway gave
    │   └── AmbiguousToolError       several servers expose the name (servers listed)
    ├── InvalidInputError            a request the gateway refuses at the edge (-32602, field named)
    ├── MissingCredentialError       an openapi/a2a call needs a security scheme's secret that
    │                                its server's config does not give (the line to add named)
    ├── UpstreamError                talking to an upstream failed
    │   ├── UpstreamConnectError     could not connect / handshake
    │   │   ├── SandboxError       a stdio server's sandbox cannot be set up (a tool it
    │   │   │   │                    requires is missing, a granted path does not exist)
    │   │   │   └── HiddenPathError  the server failed and its sandbox hides a path it was
    │   │   │                        given: the path and the line to add named
    │   │   └── BridgeError          an OpenAPI document or A2A agent card cannot be read
    │   │                            or used (the field or the path in the document named)
    │   ├── UpstreamClosedError      the session died (503-style, says what was running)
    │   ├── UpstreamTimeoutError     a call ran past its timeout
    │   ├── UpstreamCallError        the upstream answered with a JSON-RPC error
    │   ├── SignInRequiredError      the upstream wants OAuth tokens the gateway does not have
    │   │                            (none yet, or refresh failed): parked, not retried
    │   └── SignInFailedError        discovery, registration or a token request was refused
    │       └── SignInStateError     a callback whose state is unknown, forged or expired
    ├── QueryError
    │   ├── InvalidQueryError        -32602 "Invalid query parameters" {field, reason}
    │   ├── AggregationFailedError   -32603 all queried servers failed
    │   └── LlmAgentError            the LLM mode could not answer (never reaches a client:
    │                                the heuristic mode answers instead)
    ├── PolicyError                  a security policy refused the request (audited as `denied`)
    │   ├── ToolHeldError            the tool's definition changed since it was approved
    │   │                            (or it is new and held): 409 / JSON-RPC -32006
    │   └── AccessDeniedError        the client or its profile may not make this call
    │       ├── PolicyDeniedError    a client policy (CEL rule) refused the call: 403 /
    │       │   │                    JSON-RPC -32007, the rule named
    │       │   ├── GuardrailBlockedError  a guardrail's ``block`` found something in the
    │       │   │                    arguments (or in a prompt or resource): the rule and
    │       │   │                    the kind of finding named, never the value
    │       │   └── ApprovalRefusedError  a held call was denied, expired or cancelled
    │       │                        before anyone approved it (rule, status, reason named)
    │       └── OutsideProfileError  a call to a tool outside the caller's profile: only
    │                                audited; the client is told "Tool not found"
    ├── ApprovalError                the admin path to held calls (``approvals/``)
    │   ├── ApprovalNotFoundError    404: no held call has that id
    │   └── ApprovalDecidedError     409: it was decided already (or refused: its own client)
    ├── SearchError                  embedding / index failures
    ├── FacadeError                  bad command or params in a facade call
    │   └── RoundtripError           file roundtripping refused (escape, conflict, ...)
    ├── CodeModeError                 code mode cannot run scripts (sandbox not running or
    │                                could not start); a script's own failure is a result
    ├── InstallError             installing from an MCP Registry (``installs/``)
    │   ├── EntryNotFoundError       404: no such entry or version (name and registry named)
    │   ├── EntryRefusedError        409: deleted, or it cannot run here (package type named)
    │   ├── EntryInvalidError        422: a server.json breaks the schema (field named)
    │   ├── InstallInputError        422: required inputs missing (all listed) or a bad choice
    │   └── RegistryUnreachableError 502: the registry did not answer (nothing registered)
    └── AdminClientError             the CLI's request to a running gateway failed: none
                                     answers, the token is refused, or the API said no
                                     (its message, naming the field)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final


class AggregatorError(Exception):
    """Root of every error mcp-aggregator raises on purpose."""


class ConfigError(AggregatorError):
    """Configuration is invalid. ``str(err)`` names the field path."""

    def __init__(self, message: str, *, path: str | None = None) -> None:
        self.path = path
        super().__init__(f"{path}: {message}" if path else message)


class MissingExtraError(ConfigError):
    """The configuration asks for a feature whose optional packages are not installed."""

    def __init__(self, feature: str, extra: str, module: str) -> None:
        self.feature = feature
        self.extra = extra
        self.module = module
        super().__init__(
            f"{feature} needs the {extra!r} extra (the {module} package is not installed): "
            f"pip install 'mcp-aggregator[{extra}]'"
        )


class EnvVarError(ConfigError):
    """A ``${VAR}`` reference has no value at connect time."""

    def __init__(self, server: str, field: str, var: str) -> None:
        self.server = server
        self.field = field
        self.var = var
        super().__init__(f"environment variable ${{{var}}} is not set", path=f"server {server!r} {field}")


class RegistryError(AggregatorError):
    """A registry operation was refused."""


class ServerExistsError(RegistryError):
    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"Server already exists: {name}")


class ServerNotFoundError(RegistryError):
    def __init__(self, ident: str) -> None:
        self.ident = ident
        super().__init__(f"Server not found: {ident}")


class LimitExceededError(RegistryError):
    """A configured ceiling (servers, tools per server, total tools, sessions) was hit."""


class StateError(AggregatorError):
    """An operation is not allowed in the server's current state."""


class IllegalTransitionError(StateError):
    def __init__(self, state: str, event: str) -> None:
        self.state = state
        self.event = event
        super().__init__(f"illegal transition: {event} in state {state}")


class ServerUnavailableError(StateError):
    """The server cannot serve calls in its current state (HTTP 503)."""

    def __init__(self, server: str, state: str, detail: str | None = None) -> None:
        self.server = server
        self.state = state
        msg = f"Server {server} is unavailable (status {state})"
        super().__init__(f"{msg}: {detail}" if detail else msg)


class RoutingError(AggregatorError):
    """A tool name could not be routed."""


class ToolNotFoundError(RoutingError):
    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"Tool not found: {name}")


class PromptNotFoundError(RoutingError):
    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"Prompt not found: {name}")


class ResourceNotFoundError(RoutingError):
    def __init__(self, uri: str) -> None:
        self.uri = uri
        super().__init__(f"Resource not found: {uri}")


class TaskNotFoundError(RoutingError):
    def __init__(self, task_id: str) -> None:
        self.task_id = task_id
        super().__init__(f"Task not found: {task_id!r} is not a task id this gateway gave")


class AmbiguousToolError(RoutingError):
    """Several servers have the name (BR-009); ``kind`` says whether a tool, prompt or resource."""

    def __init__(self, name: str, servers: Sequence[str], *, kind: str = "tool") -> None:
        self.name = name
        self.kind = kind
        self.servers = sorted(servers)
        if kind != "resource":
            how = f"'<server>.{name}'"
        elif name.startswith("ui://"):
            how = "'ui://aggregator+<server>/" + name.removeprefix("ui://") + "'"
        else:
            how = "'aggregator+<server>:" + name + "'"
        super().__init__(
            f"{kind.capitalize()} name {name!r} is ambiguous: offered by servers {', '.join(self.servers)}; "
            f"call it as {how}"
        )


class InvalidInputError(AggregatorError):
    """A request refused at the edge before it reaches any upstream (JSON-RPC -32602)."""

    def __init__(self, field: str, reason: str) -> None:
        self.field = field
        self.reason = reason
        super().__init__(f"Invalid params: {field}: {reason}")


class UpstreamError(AggregatorError):
    """Talking to an upstream MCP server failed."""

    def __init__(self, server: str, message: str) -> None:
        self.server = server
        super().__init__(f"{server}: {message}")


class UpstreamConnectError(UpstreamError):
    """Connecting or the protocol handshake failed."""


class SandboxError(UpstreamConnectError):
    """A stdio server's sandbox cannot be set up; nothing of it was left running. The
    message names the setting (``sandbox.write[0]``) or the missing tool."""


class BridgeError(UpstreamConnectError):
    """An ``openapi`` or ``a2a`` server's document or agent card cannot be read or used; the
    message names the setting (``spec``, ``base_url``, ``operations[1]``) or the path in the
    document (``paths./pets.get.requestBody``)."""


class MissingCredentialError(AggregatorError):
    """An ``openapi`` operation or ``a2a`` skill needs a security scheme's secret that its
    server's config does not give; the message names the scheme and the line to add."""


class HiddenPathError(SandboxError):
    """A sandboxed server failed, and its sandbox hides paths it was given: each is named
    with the ``sandbox:`` line that shows it. Not retried: the sandbox stays as it is until
    its entry changes."""


class UpstreamClosedError(UpstreamError):
    """The upstream session ended (process died, connection lost) or is closing."""


class UpstreamTimeoutError(UpstreamError):
    """A call ran past its timeout with no progress."""


class UpstreamCallError(UpstreamError):
    """The upstream answered a request with a JSON-RPC error."""

    def __init__(self, server: str, message: str, *, code: int, data: object = None) -> None:
        self.code = code
        self.data = data
        super().__init__(server, message)


class SignInRequiredError(UpstreamError):
    """The upstream needs a (new) sign-in: no tokens yet, or they could not be refreshed.

    Retrying cannot fix it; the server waits until someone signs in. ``auth_status`` is
    ``sign_in_required`` or ``refresh_failed``.
    """

    def __init__(self, server: str, auth_status: str, detail: str | None = None, *, url: str | None = None) -> None:
        self.auth_status = auth_status
        self.url = url
        """Per user: the caller's own sign-in URL."""
        what = "its tokens could not be refreshed" if auth_status == "refresh_failed" else "no one has signed in yet"
        message = (
            f"sign-in required ({what}{': ' + detail if detail else ''}); sign in with "
            f"`mcp-aggregator servers login {server}` or POST /api/v1/aggregator/servers/<id>/oauth/start"
        )
        super().__init__(server, message)


class SignInFailedError(UpstreamError):
    """An authorization server refused a step of the sign-in (discovery, registration, token,
    token exchange), or a per-user call brought no token of its user's to exchange."""


class SignInStateError(SignInFailedError):
    """A callback whose ``state`` the gateway did not issue, already used, or expired."""

    def __init__(self, reason: str) -> None:
        super().__init__("oauth", f"sign-in callback refused: {reason}")


class QueryError(AggregatorError):
    """The aggregator query failed."""


class InvalidQueryError(QueryError):
    """Arguments of an aggregator query are invalid (JSON-RPC -32602)."""

    def __init__(self, field: str, reason: str) -> None:
        self.field = field
        self.reason = reason
        super().__init__(f"Invalid query parameters: {field}: {reason}")


class AggregationFailedError(QueryError):
    """Every queried server failed (JSON-RPC -32603)."""

    def __init__(self, attempted: Sequence[str], errors: Sequence[str]) -> None:
        self.attempted = list(attempted)
        self.errors = list(errors)
        super().__init__("Aggregation failed: all servers unavailable")


class LlmAgentError(QueryError):
    """The LLM-agent mode gave up: no API key, an API error, a timeout, a useless answer.
    ``str(err)`` is the reason the response's metadata reports as ``llmFallback``."""


class PolicyError(AggregatorError):
    """A security policy refused the request."""


class ToolHeldError(PolicyError):
    """A call to a tool held by definition pinning, until an admin approves it."""

    _WHY: Final = {
        "changed": "its definition changed since it was approved",
        "new": "it is new on this server and not approved yet",
        "flagged": "a guardrail on tool definitions found something in it that no admin has approved",
    }

    def __init__(self, server: str, tool: str, *, reason: str) -> None:
        """``reason``: ``changed``, ``new`` or ``flagged`` (the pin's status)."""
        self.server = server
        self.tool = tool
        self.reason = reason
        why = self._WHY[reason]
        super().__init__(
            f"Tool {server}.{tool} is held: {why}. An admin must review and approve it "
            f"(POST /api/v1/aggregator/servers/<id>/tools/approve)"
        )


class AccessDeniedError(PolicyError):
    """The calling client (or the profile it came in on) may not make this call.

    The base of every refusal by identity or policy (profiles, CEL policies...): the audit
    records such a call as ``denied``. ``denied`` is True on it, so code that cannot import
    this class can tell a denial by that attribute.
    """

    denied = True


class PolicyDeniedError(AccessDeniedError):
    """A configured policy rule refused a call for this client."""

    def __init__(self, rule: str, tool: str, *, reason: str | None = None, message: str | None = None) -> None:
        self.rule = rule
        self.tool = tool
        self.reason = reason
        text = f"Call to {tool} denied by policy {rule!r}"
        if message:
            text += f": {message}"
        elif reason:
            text += f" (the rule could not be evaluated: {reason})"
        super().__init__(text)


class GuardrailBlockedError(PolicyDeniedError):
    """A guardrail rule with ``block`` refused what it saw (``explanation``: rule, kind, labels)."""

    def __init__(self, rule: str, tool: str, explanation: str) -> None:
        super().__init__(rule, tool, message=explanation)


class ApprovalRefusedError(PolicyDeniedError):
    """A call held for a person's approval that was not approved: ``status`` is ``denied``,
    ``expired`` or ``cancelled``; ``reason`` what the person (or the gateway) said."""

    def __init__(self, rule: str, tool: str, *, status: str, reason: str | None, approval_id: str) -> None:
        self.status = status
        self.approval_id = approval_id
        text = {
            "denied": "was denied",
            "expired": "was not approved in time (it expired)",
            "cancelled": "was cancelled before anyone decided",
        }.get(status, f"was not approved ({status})")
        super().__init__(rule, tool, reason=reason)
        message = f"Call to {tool} needs approval (rule {rule!r}) and {text}"
        if reason:
            message += f": {reason}"
        self.args = (f"{message} [approval {approval_id}]",)


class OutsideProfileError(AccessDeniedError):
    """A call to a tool the gateway has but the caller's profile does not select.

    The audit records it; the client gets ``ToolNotFoundError`` instead, so that it cannot
    tell a tool outside its slice from one that does not exist.
    """

    def __init__(self, name: str, profile: str) -> None:
        self.name = name
        self.profile = profile
        super().__init__(f"{name} is outside profile {profile!r}")


class ApprovalError(AggregatorError):
    """A decision on a held call could not be taken."""


class ApprovalNotFoundError(ApprovalError):
    def __init__(self, approval_id: str) -> None:
        self.approval_id = approval_id
        super().__init__(f"No held call with id {approval_id!r}")


class ApprovalDecidedError(ApprovalError):
    """The held call was decided already, or the decider may not decide it."""


class SearchError(AggregatorError):
    """Embedding or index failure."""


class FacadeError(AggregatorError):
    """A facade call was refused (unknown command, bad params)."""


class RoundtripError(FacadeError):
    """File roundtripping refused: path escape, conflict, unknown manifest."""


class CodeModeError(AggregatorError):
    """The code sandbox cannot run scripts at all (not started, or its workers cannot start).

    A failing script is not this: it comes back as an error result the model can act on."""


class InstallError(AggregatorError):
    """Finding or installing a server from an MCP Registry (or a ``server.json``) failed."""


class EntryNotFoundError(InstallError):
    """No entry (or no such version) of that name in the registry named."""

    def __init__(self, name: str, registry: str, version: str | None = None) -> None:
        self.name = name
        self.registry = registry
        what = f"{name}@{version}" if version and version != "latest" else name
        super().__init__(f"no server {what!r} in registry {registry!r}")


class EntryRefusedError(InstallError):
    """The entry exists but will not be installed: deleted, or nothing here can run it."""


class EntryInvalidError(InstallError):
    """A ``server.json`` breaks the schema; ``field`` is the path of the first bad field."""

    def __init__(self, field: str, reason: str) -> None:
        self.field = field
        self.reason = reason
        super().__init__(f"invalid server.json: {field}: {reason}")


@dataclass(frozen=True)
class MissingInput:
    """A required input no value was given for: what a client may ask its user for."""

    field: str
    """Where its value goes in an install request: ``env``, ``headers`` or ``arguments``."""
    name: str
    description: str | None = None
    secret: bool = False
    choices: tuple[str, ...] = ()


class InstallInputError(InstallError):
    """The inputs given do not satisfy the entry: every problem is listed; ``missing`` holds
    the problems that are only a required input without a value."""

    def __init__(self, problems: Sequence[str], missing: Sequence[MissingInput] = ()) -> None:
        self.problems = list(problems)
        self.missing = list(missing)
        super().__init__("; ".join(self.problems))


class RegistryUnreachableError(InstallError):
    """The MCP Registry did not answer (or answered with an error status)."""


class AdminClientError(AggregatorError):
    """A request of the CLI to a running gateway's REST API failed; ``str(err)`` is for the user;
    ``detail`` is the error answer's ``detail`` when the gateway gave one."""

    def __init__(self, message: str, *, detail: Any = None) -> None:
        self.detail = detail
        super().__init__(message)
