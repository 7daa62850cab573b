"""Turn a catalog entry into an MCP tool with flat, typed, described parameters.

The published input schema comes from the request model's fields, but the SDK's own argument
validation is bypassed (its model accepts anything): hyperloom.core.arguments validates every call
with the request model itself, so unknown arguments are refused, not dropped, and every refusal
names the argument, the cause and the next step. Anything a tool raises becomes one such message;
a bug is logged with its traceback and answered as an internal error, never as a silent failure.
"""

from __future__ import annotations

import errno
import inspect
import json
import logging
from typing import Annotated, Any

import anyio
import anyio.from_thread
import anyio.to_thread
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field

from hyperloom.core.arguments import validate_arguments
from hyperloom.core.errors import HyperloomError
from hyperloom.core.workspace import Workspace
from hyperloom.mcp_server.schemas import lean_input, lean_output
from hyperloom.tools.catalog import Family, ToolDef
from hyperloom.tools.catalog import tool as catalog_entry

log = logging.getLogger(__name__)
MESSAGE_CHARS = 1200


class RawArguments(ArgModelBase):
    """Stands in for the SDK's argument model: takes any object, so our own layer validates it."""

    model_config = ConfigDict(extra="allow")

    def model_dump_one_level(self) -> dict[str, Any]:
        return dict(self.__pydantic_extra__ or {})


def _parameters(entry: ToolDef) -> list[inspect.Parameter]:
    """One keyword parameter per request field, carrying its type, bounds and description (the published schema)."""
    params = []
    for name, field in entry.request.model_fields.items():
        annotation = Annotated[(field.annotation, *field.metadata, Field(description=field.description))]
        default = inspect.Parameter.empty if field.is_required() else field.get_default(call_default_factory=True)
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation))
    return params


def refusal(entry: ToolDef, exc: BaseException) -> str:
    """What the caller reads when `entry` raised `exc`: cause and next step, bounded in length."""
    if isinstance(exc, HyperloomError):
        text = str(exc)
    elif isinstance(exc, OSError):  # a path the checks let through and the OS refused: the caller's to fix
        cause = "a name in the path is too long" if exc.errno == errno.ENAMETOOLONG else (exc.strerror or type(exc).__name__)
        text = (f"{entry.name} could not use a file or folder: {cause}. Next step: check the paths you passed (files where files are "
                "expected, folders where folders are).")
    elif isinstance(exc, MemoryError):
        text = f"{entry.name} ran out of memory on this input. Next step: pass smaller inputs."
    else:
        text = (f"internal error in {entry.name} ({type(exc).__name__}). Next step: report it with the arguments; the server log has "
                "the traceback.")
    return text if len(text) <= MESSAGE_CHARS else text[: MESSAGE_CHARS - 1] + "…"


def refused(message: str) -> CallToolResult:
    """An error result whose text is the message alone. Raising ToolError instead would make the SDK prefix it with
    "Error executing tool NAME: ", and a host adds its own "Error:" in front of that (the agent loop its "ERROR: ")."""
    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)


def answer(result: BaseModel) -> CallToolResult:
    """The result as structured content and as compact JSON text (clients that read only text get every field that
    has a value: the text leaves out null fields, which a model reads the same as absent ones, and saves the context)."""
    structured = result.model_dump(mode="json")
    text = json.dumps(without_nulls(structured), separators=(",", ":"))
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured)


def without_nulls(value: Any) -> Any:
    """`value` with every object field whose value is null left out, at any depth (list items are kept as they are)."""
    if isinstance(value, dict):
        return {key: without_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [without_nulls(item) for item in value]
    return value


async def _run(entry: ToolDef, arguments: dict[str, Any], ctx: Context) -> CallToolResult:
    """Validate `arguments` with the entry's request model, run the tool in a worker thread, map every failure to a
    refusal with its next step."""

    def progress(done: int, total: int) -> None:
        anyio.from_thread.run(ctx.report_progress, float(done), float(total))

    try:
        request = validate_arguments(entry.request, arguments)
        workspace = Workspace.from_env()
        return answer(await anyio.to_thread.run_sync(entry.run, request, workspace, progress))
    except HyperloomError as exc:
        log.info("%s refused: %s", entry.name, exc)
        return refused(refusal(entry, exc))
    except Exception as exc:  # noqa: BLE001 - the one place every failure becomes an answer
        log.exception("%s failed", entry.name)
        return refused(refusal(entry, exc))


def tool_function(entry: ToolDef) -> Any:
    """An async MCP tool body that validates, runs the tool in a worker thread and maps errors."""

    async def call(ctx: Context, **arguments: Any) -> Any:
        return await _run(entry, arguments, ctx)

    params = [*_parameters(entry), inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context)]
    call.__name__ = entry.name
    call.__doc__ = entry.description
    call.__signature__ = inspect.Signature(params, return_annotation=entry.result)  # type: ignore[attr-defined]
    call.__annotations__ = {p.name: p.annotation for p in params} | {"return": entry.result}
    return call


def build_tool(entry: ToolDef | Family) -> Tool:
    """The MCP tool of a catalog entry, or of a family of entries (one tool, the verb picked by `action`)."""
    if isinstance(entry, Family):
        return build_family_tool(entry)
    tool = Tool.from_function(
        tool_function(entry),
        name=entry.name,
        title=entry.title,
        description=entry.description,
        annotations=ToolAnnotations(  # no title here: the tool's own title says it once
            read_only_hint=entry.read_only,
            destructive_hint=None if entry.read_only else entry.destructive,  # meaningful only for a tool that writes
            idempotent_hint=entry.idempotent,
            open_world_hint=entry.open_world,
        ),
    )
    tool.fn_metadata.arg_model = RawArguments  # validation is ours (validate_arguments), with the request model's messages
    tool.parameters = lean_input(tool.parameters)
    tool.fn_metadata.output_schema = lean_output(tool.fn_metadata.output_schema)
    return tool


def build_family_tool(family: Family) -> Tool:
    """One MCP tool for a family's verbs: `action` picks the entry, whose request model validates the other arguments
    (an argument of another action is refused naming the actions it belongs to). The input schema is every verb's
    parameters side by side (a parameter not every action takes says which do). It has no output schema: which fields
    come back depends on the action, so the union of every verb's result, all optional, would validate almost anything
    while hosts list it in every session (issue 47); its answers are structured all the same, each verb's result model."""
    verbs = {action: catalog_entry(name) for action, name in family.actions}
    built = {action: build_tool(entry) for action, entry in verbs.items()}

    async def call(ctx: Context, **arguments: Any) -> Any:
        action = arguments.pop("action", None)
        if not isinstance(action, str) or action not in verbs:
            return refused(f"{family.name} needs action, one of {', '.join(verbs)} (got {str(action)[:40]!r}). "
                            f"Next step: call {family.name} again with action set.")
        entry = verbs[action]
        elsewhere = [name for name in arguments if name not in entry.request.model_fields
                     and any(name in e.request.model_fields for e in verbs.values())]
        if elsewhere:
            owners = {name: [a for a, e in verbs.items() if name in e.request.model_fields] for name in elsewhere}
            return refused(f"{family.name} action {action} does not take "
                           + "; ".join(f"{n} (an argument of {', '.join(o)})" for n, o in owners.items())
                            + f". Next step: leave {'them' if len(elsewhere) > 1 else 'it'} out, or call action {owners[elsewhere[0]][0]}.")
        return await _run(entry, arguments, ctx)

    call.__name__ = family.name
    call.__doc__ = family.description
    call.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context)], return_annotation=CallToolResult)
    entries = list(verbs.values())
    writes = [e for e in entries if not e.read_only]
    tool = Tool.from_function(
        call, name=family.name, title=family.title, description=family.description,
        annotations=ToolAnnotations(
            read_only_hint=not writes,
            destructive_hint=any(e.destructive for e in writes) if writes else None,
            idempotent_hint=all(e.idempotent for e in entries),
            open_world_hint=any(e.open_world for e in entries),
        ),
    )
    tool.fn_metadata.arg_model = RawArguments
    tool.parameters = _family_input(family.name, {action: t.parameters for action, t in built.items()})
    return tool


def _family_input(name: str, schemas: dict[str, dict[str, Any]]) -> dict[str, Any]:
    actions = list(schemas)
    properties: dict[str, Any] = {"action": {"enum": actions, "description": "The verb."}}
    takers: dict[str, list[str]] = {}
    for action, schema in schemas.items():
        for field, prop in schema.get("properties", {}).items():
            takers.setdefault(field, []).append(action)
            properties.setdefault(field, dict(prop))
    for field, which in takers.items():
        if len(which) < len(actions) and properties[field].get("description"):
            properties[field]["description"] = f"({', '.join(which)}) " + properties[field]["description"]
    return {"type": "object", "properties": properties, "required": ["action"]}
