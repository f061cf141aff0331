"""A deployed graph's schemas as a local graph gives them: pydantic models and JSON schemas.

The server publishes the graph's JSON schemas (``GET /assistants/{id}/schemas``:
``input_schema``, ``output_schema``, ``context_schema``, ...). A local graph
gives pydantic models (``input_schema``, ``output_schema``) whose JSON schemas
are those; langchain's tool machinery (``as_tool``, an agent's tools) reads
both. ``published_model`` makes a model of a published JSON schema: one field
a property, required as the schema says, each field's JSON schema the
published one, and the model's ``model_json_schema()`` the published schema
itself, so nothing is lost in translation. Its fields take any value: the
deployed graph validates its own input, as a local graph does at its start.
"""

from __future__ import annotations

import copy
from collections.abc import Generator, Mapping
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, GetJsonSchemaHandler, WithJsonSchema, create_model

from remote_graph._core.actions import Broken, Request, Response
from remote_graph._core.schema import GraphSchemas, learn_schemas

__all__ = ["PublishedModel", "output_model", "published", "published_model"]

# What a graph whose server cannot say its schemas takes: any object.
_UNKNOWN: Mapping[str, Any] = {"type": "object"}


class PublishedModel(BaseModel):
    """A model of a JSON schema the server published; its JSON schema is that one."""

    model_config = ConfigDict(extra="allow", arbitrary_types_allowed=True)
    published_schema: ClassVar[dict[str, Any]] = {}

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """The published JSON schema (a copy: a caller may change it)."""
        return copy.deepcopy(cls.published_schema)

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: Any, handler: GetJsonSchemaHandler) -> dict[str, Any]:
        """The published JSON schema where another model's schema holds this one (a
        config's ``configurable``); one with definitions of its own is pydantic's."""
        if "$defs" in cls.published_schema or not cls.published_schema:
            return dict(handler(core_schema))
        return copy.deepcopy(cls.published_schema)


def published_model(name: str, schema: Mapping[str, Any] | None) -> type[PublishedModel]:
    """A pydantic model of a published JSON schema, named ``name`` unless the schema has a title.

    Args:
        name: The model's name when the schema has no ``title``.
        schema: The published JSON schema (``None`` or not an object schema:
            the server could not say, and the model takes any object).
    """
    published = dict(schema) if isinstance(schema, Mapping) and schema else {**_UNKNOWN, "title": name}
    properties = published.get("properties")
    required = set(published.get("required") or ())
    fields: dict[str, Any] = {}
    for key, prop in properties.items() if isinstance(properties, Mapping) else ():
        if not isinstance(key, str) or not key.isidentifier() or key.startswith("_"):
            continue  # pydantic cannot name it a field; the published schema still lists it
        annotation = Annotated[Any, WithJsonSchema(dict(prop) if isinstance(prop, Mapping) else {})]
        default = ... if key in required else Field(default=prop.get("default") if isinstance(prop, Mapping) else None)
        fields[key] = (annotation, default)
    title = published.get("title")
    model = create_model(
        title if isinstance(title, str) and title.isidentifier() else name, __base__=PublishedModel, **fields
    )
    model.published_schema = published
    return model


def output_model(name: str, schema: Mapping[str, Any] | None) -> type[PublishedModel]:
    """The output model a local graph gives (``{name}Output``): the published output
    schema's keys, each optional with a ``None`` default, as langgraph makes it."""
    if not isinstance(schema, Mapping) or not isinstance(schema.get("properties"), Mapping):
        return published_model(name, schema)
    properties = {
        key: {**prop, "default": None} if isinstance(prop, Mapping) else {"default": None}
        for key, prop in schema["properties"].items()
    }
    local: dict[str, Any] = {"properties": properties, "title": name, "type": "object"}
    if "$defs" in schema:
        local["$defs"] = schema["$defs"]
    return published_model(name, local)


def published(assistant_id: str, schemas: GraphSchemas) -> Generator[Request, Response | Broken, Mapping[str, Any]]:
    """The server's published schemas of the graph, asked for once per ``RemoteGraph``."""
    if not schemas.known:
        yield from learn_schemas(assistant_id, schemas)
    return schemas.published
