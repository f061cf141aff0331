"""The README's "Errors" paragraph says what the code does: no thread id is bad input."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from remote_graph import default_map_thread_id
from tests.unit.test_bad_input import MockServer

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")


def section(title: str) -> str:
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## )", README, re.S | re.M)
    assert match is not None, title
    return match.group(1)


def errors_paragraph() -> str:
    match = re.search(r"^- Errors:(.*?)(?=^- )", section("Beyond local"), re.S | re.M)
    assert match is not None
    return match.group(1)


def test_the_errors_paragraph_lists_no_thread_id_as_bad_input() -> None:
    paragraph = " ".join(errors_paragraph().split())
    bad_input = paragraph[paragraph.index("Bad input fails before anything is sent") :].split(". ")[0]
    assert "thread" not in bad_input
    assert "No thread id is bad input" in paragraph


@pytest.mark.parametrize("thread_id", [".", "..", "", "tenant/7", "a/../b"])
def test_the_thread_ids_the_readme_says_work_do_work(thread_id: str) -> None:
    assert f'"{thread_id}"' in section("Thread ids") or thread_id in ("..", "a/../b")
    seen: list[str] = []

    def respond(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.path)
        return httpx.Response(200, json={"values": {}, "next": [], "tasks": [], "metadata": None, "created_at": None})

    MockServer(respond).graph().get_state({"configurable": {"thread_id": thread_id}})
    # (The graph's schemas are read first, from the assistant.)
    reads = [path for path in seen if path.startswith("/threads")]
    assert len(reads) == 1 and reads[0].startswith(f"/threads/{default_map_thread_id(thread_id)}/state")
