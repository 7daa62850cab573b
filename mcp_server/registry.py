"""Turn a catalog entry into an MCP tool with flat, typed, described parameters."""

from __future__ import annotations

import inspect
import logging
from typing import Annotated, Any

import anyio
import anyio.from_thread
import anyio.to_thread
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field, ValidationError

from hyperloom.core.errors import HyperloomError, describe_validation_error
from hyperloom.core.workspace import Workspace
from hyperloom.tools.catalog import ToolDef

log = logging.getLogger(__name__)


def _parameters(entry: ToolDef) -> list[inspect.Parameter]:
    """One keyword parameter per request field, carrying its type, bounds and description."""
    params = []
    for name, field in entry.request.model_fields.items():
        annotation = Annotated[(field.annotation, *field.metadata, Field(description=field.description))]
        default = inspect.Parameter.empty if field.is_required() else field.get_default(call_default_factory=True)
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation))
    return params


def tool_function(entry: ToolDef) -> Any:
    """An async MCP tool body that validates, runs the tool in a worker thread and maps errors."""

    async def call(ctx: Context, **arguments: Any) -> Any:
        try:
            request = entry.request.model_validate(arguments)
        except ValidationError as exc:
            raise ToolError(f"invalid arguments: {describe_validation_error(exc)}. Next step: fix them and call again.") from exc

        def progress(done: int, total: int) -> None:
            anyio.from_thread.run(ctx.report_progress, float(done), float(total))

        try:
            workspace = Workspace.from_env()
            return await anyio.to_thread.run_sync(entry.run, request, workspace, progress)
        except HyperloomError as exc:
            log.info("%s refused: %s", entry.name, exc)
            raise ToolError(str(exc)) from exc

    params = [*_parameters(entry), inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context)]
    call.__name__ = entry.name
    call.__doc__ = entry.description
    call.__signature__ = inspect.Signature(params, return_annotation=entry.result)  # type: ignore[attr-defined]
    call.__annotations__ = {p.name: p.annotation for p in params} | {"return": entry.result}
    return call


def register(server: MCPServer, entry: ToolDef) -> None:
    server.add_tool(
        tool_function(entry),
        name=entry.name,
        title=entry.title,
        description=entry.description,
        annotations=ToolAnnotations(
            title=entry.title,
            read_only_hint=entry.read_only,
            destructive_hint=entry.destructive,
            idempotent_hint=entry.idempotent,
            open_world_hint=entry.open_world,
        ),
    )
