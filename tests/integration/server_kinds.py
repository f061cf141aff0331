"""What a server version is known to do differently, for the tests that meet it.

``langhost``'s Postgres + Redis runtime (langgraph-runtime-pg 0.11.1.post1) drops
some events that are not stored for a replay (a subgraph's ``lifecycle``, the
module's ``custom:<name>`` channels) on their live way to the stream: it tells
repeats apart by an id it makes from its own clock, and a stored event's id, made by
Redis, can be the same. The client rebuilds lifecycle from the events that are
stored; a named channel read off the wire it cannot, so those scenarios are skipped
there and ``test_probe_the_pg_runtime_drops_channel_events`` measures the loss.

``langhost`` (``--remote-graph-server=replicas``) serves langgraph-api 0.11.1, whose
event serializer writes a ``Send`` inside an ``on_chain_end`` output of ``events``
mode as ``null`` (0.16 writes the ``Send``); aegra writes its repr (a string).
The client cannot bring back what the server dropped, so this is a divergence of
that server, kept on purpose
(README, "Divergences from local"): the conformance scenarios compare everything
else, and ``test_probe_sends_in_chain_end_outputs_arrive_as_the_server_writes_them``
pins what each server sends.

aegra (``--remote-graph-server=aegra``) keeps no run arguments on a run's record
(no ``kwargs``; its ``config`` loses the configurable): nothing tells a v3 run
from a classic one there, or names the stream modes a run streams, so a join
cannot refuse one of the wrong kind (``test_aegra_server.py``'s probe). It calls
a run that paused for input ``interrupted``, as a cancelled one; langgraph-api
calls it ``success``. The client reads either as ``RunStatus.INTERRUPTED``.

aegra sends every message of the ``messages`` stream mode as a chunk, on
purpose: a whole message a node returned or a model that does not stream made
comes as an ``AIMessageChunk`` / ``ToolMessageChunk`` (aegra_api's
``_to_message_chunk``), where local has the ``AIMessage`` / ``ToolMessage``. A
whole message made one chunk cannot be told from a model's one-chunk stream, so
the client gives what came; on aegra ``objects()`` compares a chunk as its whole
message on both sides (``objects.WHOLE_MESSAGES``), and
``test_aegra_server.py``'s probe pins what aegra sends.
"""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.types import Send


def drops_live_channel_events(request: pytest.FixtureRequest) -> bool:
    """Whether the session's server drops some named-channel events on their live way."""
    return bool(request.config.getoption("--remote-graph-server") == "replicas")


def drops_sends_in_events(request: pytest.FixtureRequest) -> bool:
    """Whether the session's server writes a ``Send`` in an event's output as ``null``
    (langgraph-api 0.11) or as its repr (aegra): either way, not as a ``Send``."""
    return bool(request.config.getoption("--remote-graph-server") in ("replicas", "aegra"))


def sends_as_null(value: Any) -> Any:
    """``value`` (a run's events) with each ``Send`` in an ``on_chain_end`` output
    as ``None``, as langgraph-api 0.11 sends it; aegra's repr of one too."""
    if isinstance(value, list):
        return [sends_as_null(item) for item in value]
    if isinstance(value, dict):
        if value.get("event") == "on_chain_end" and isinstance(value.get("data"), dict):
            data = value["data"]
            if "output" in data:
                return {**value, "data": {**data, "output": null_sends(data["output"])}}
        return {key: sends_as_null(item) for key, item in value.items()}
    return value


def null_sends(output: Any) -> Any:
    """``output`` with each ``Send`` in it as ``None``: a ``Send``, aegra's repr of one,
    or one recorded as its fields (``{"send": ..., "arg": ...}``)."""
    if isinstance(output, Send) or isinstance(output, str) and output.startswith("Send(node="):
        return None
    if isinstance(output, dict) and output.keys() == {"send", "arg"}:
        return None
    if isinstance(output, (list, tuple)):
        return type(output)(null_sends(item) for item in output)
    if isinstance(output, dict):
        return {key: null_sends(item) for key, item in output.items()}
    return output


def keeps_run_arguments(config: pytest.Config) -> bool:
    """Whether the session's server keeps a run's arguments (kind, stream modes) on its record."""
    return bool(config.getoption("--remote-graph-server") != "aegra")


def paused_run_status(config: pytest.Config) -> str:
    """The session's server's own status word for a run that paused for input."""
    return "interrupted" if config.getoption("--remote-graph-server") == "aegra" else "success"


def sends_whole_messages_as_chunks(config: pytest.Config) -> bool:
    """Whether the session's server sends a whole message of ``messages`` mode as a chunk."""
    return bool(config.getoption("--remote-graph-server") == "aegra")


def is_aegra(config: pytest.Config) -> bool:
    """Whether the session's server is aegra, which is not langgraph-api: the probes
    of langgraph-api's own ways (its health path, its statuses, what it mirrors
    into a run's configurable, what a v3 run streams) say what aegra does instead."""
    return bool(config.getoption("--remote-graph-server") == "aegra")


# Tests that meet a difference of aegra's the client cannot absorb, each kept on
# purpose with its probe (docs/divergences.md, docs/aegra.md): a test whose node id
# holds a key is skipped on aegra, with the reason. Every other test runs there.
_CONTENT = (
    "aegra runs a chat model the classic way, so the state's message holds plain content where a local "
    "v3 run's holds content blocks (probe: test_without_v3.py's CONTENT_FORMAT scenarios)"
)
_CHUNKS = (
    "aegra sends every message of messages mode as a chunk, and this scenario records the class by name "
    "(probe: test_aegra_server.py::test_probe_a_whole_message_comes_as_a_chunk_in_messages_mode)"
)
_TRANSFORMERS = (
    "a server without the v3 protocol runs no module transformer, so named channels stay empty "
    "(probe: test_without_v3.py::test_probe_a_server_without_v3_runs_no_module_transformer)"
)
_V3_WIRE = "a probe of langgraph-api's v3 wire and run records, which aegra does not have"
_MULTITASK = (
    "aegra takes a multitask_strategy and acts on none "
    "(probe: test_aegra_server.py::test_probe_a_busy_threads_multitask_strategy_is_not_honoured_there)"
)
AEGRA_GAPS: dict[str, str] = {
    **{
        f"test_conformance.py::test_local_equals_remote[{flavour}-{name}]": _CONTENT
        for flavour in ("sync", "async")
        for name in ("message_objects_in_input", "messages_agent_tool_calls", "messages_chat_tokens", "updates_agent")
    },
    **{
        f"test_plain_module.py::test_local_equals_remote_on_a_module_without_the_hook[{flavour}-conformance.{name}]": (
            _CONTENT
        )
        for flavour in ("sync", "async")
        for name in ("message_objects_in_input", "messages_agent_tool_calls", "messages_chat_tokens")
    },
    "-the_supervisor_as_a_v3_run]": _CONTENT,
    "-child_agent_tool_events_and_updates]": _CONTENT,
    "-stream_messages_of_an_agent_child]": _CHUNKS,
    "-stream_v2_messages_values_updates_in_order]": _CHUNKS,
    "-the_workers_tokens_in_the_parents_messages_stream]": _CHUNKS,
    **{
        f"test_zero_config.py::test_local_equals_remote[{flavour}-{name}]": _TRANSFORMERS
        for flavour in ("sync", "async")
        for name in ("module_channels_by_name", "module_channel_subscribed_mid_run", "raw_events_toolflow")
    },
    **{
        f"test_zero_config.py::{probe}": _V3_WIRE
        for probe in (
            "test_probe_what_the_wire_carries_of_nodes_and_returned_messages",
            "test_probe_a_replay_holds_only_the_runs_stream_modes",
            "test_probe_updates_and_custom_exist_where_the_module_registers_neither",
            "test_probe_the_pg_runtime_drops_channel_events",
            "test_probe_a_message_node_is_none_at_its_start_when_the_state_cannot_be_read",
            "test_probe_v3_message_deltas_carry_no_message_id",
        )
    },
    "test_thread_ids.py::test_probe_the_server_runs_a_named_thread_under_its_uuid": _V3_WIRE,
    "test_composition.py::test_probe_a_remote_childs_message_keeps_the_node_named_at_its_start": _V3_WIRE,
    "test_remote.py::test_reject_on_a_busy_thread_fails_with_409": _MULTITASK,
    "test_remote.py::test_enqueue_on_a_busy_thread_waits_for_the_first_run": _MULTITASK,
    "test_remote.py::test_interrupt_and_rollback_cancel_the_running_run[": _MULTITASK,
}


def aegra_gap(config: pytest.Config, nodeid: str) -> str | None:
    """Why the test ``nodeid`` is skipped on the session's server, or ``None`` when it runs."""
    if config.getoption("--remote-graph-server") != "aegra":
        return None
    return next((reason for key, reason in AEGRA_GAPS.items() if key in nodeid), None)
