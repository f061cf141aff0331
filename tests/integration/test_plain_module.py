"""v3 run streams of graphs served from a module without a ``stream_transformers()`` hook: equal to local.

Most deployed modules have no hook. ``app/plain.py`` serves the graphs of
``graphs.py`` and ``classic.py`` so (as ``plain_<name>``), and every v3
scenario of the conformance and human-in-the-loop suites runs on them, against
the same graphs compiled locally with no transformers, on [local, remote] x
[sync, async]. The remote graph is told nothing but ``stream_transformers=()``,
which says the module registers no ``UpdatesTransformer`` / ``CustomTransformer``
(the server does not say it: ``docs/divergences.md``).

A scenario that reads ``run.updates`` or ``run.custom`` has nothing to read
from such a module, locally either: both lanes raise the same
``AttributeError``, which is what is compared for those. A transformer the
caller registers that needs ``updates`` (``NEEDS_UPDATES``) is the one
difference kept: locally the graph streams them for it; the server streams a
v3 run's ``updates`` only where the module's hook registers
``UpdatesTransformer`` (``docs/divergences.md``), and the client warns that
they got none.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from tests.integration import test_conformance, test_hitl
from tests.integration.lanes import Lane, compare
from tests.integration.server_kinds import is_aegra

pytestmark = pytest.mark.integration

SCENARIOS = {
    f"{module.__name__.rsplit('.', 1)[-1].removeprefix('test_')}.{name}": fn
    for module in (test_conformance, test_hitl)
    for name, fn in module.SCENARIOS.items()
}


def _raised_alike(fn: Any) -> Any:
    """The scenario's result, or the type of what it raised and the attribute missing."""

    def run(lane: Lane) -> Any:
        try:
            return fn(lane)
        except AttributeError as exc:
            return {"raised": type(exc).__name__, "missing": exc.name}
        except KeyError as exc:
            return {"raised": type(exc).__name__, "missing": exc.args}

    return run


# A call-site transformer that needs ``updates``: it gets none from such a module.
NEEDS_UPDATES = frozenset({"conformance.call_site_transformer"})
# ``interleave`` of a projection that is not there: ``run.extensions[name]`` differs.
NAME_NEVER_SENT = frozenset({"conformance.interleave_values_updates_lifecycle"})


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_local_equals_remote_on_a_module_without_the_hook(
    name: str, flavour: str, server_url: str, pytestconfig: pytest.Config
) -> None:
    fn = _raised_alike(SCENARIOS[name])
    reference = "sync" if SCENARIOS[name] is test_conformance.interleave_values_updates_lifecycle else None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        local, remote = compare(
            fn, flavour, server_url, reference_flavour=reference, local="plain-local", remote="plain-remote"
        )
    # The client says when the caller's transformers got no updates, and only then.
    # A server without the v3 protocol (aegra) streams the classic updates mode:
    # the caller's transformers get them there, as locally.
    needs_updates = name in NEEDS_UPDATES and not is_aegra(pytestconfig)
    told = [w for w in caught if "sent no 'updates' events" in str(w.message)]
    assert bool(told) is needs_updates
    if needs_updates:
        # Everything but what the updates would have fed is the same.
        assert local["names"] and remote["names"] == []
        assert [m for m in local["methods"] if m not in ("updates", "node_names")] == remote["methods"]
        assert remote["extensions"] == local["extensions"]
        return
    if name in NAME_NEVER_SENT:
        # Locally a name no transformer projects is a KeyError at once; remotely a
        # channel that ends empty (the server lists no names: docs/divergences.md).
        assert local == {"raised": "KeyError", "missing": ("updates",)}
        assert remote and all(item[0] != "updates" for item in remote)
        return
    assert remote == local
