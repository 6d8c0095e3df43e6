"""The ATIF v1.7 schema and rules (orchestrator/trajectory/atif.py), both ways: what RFC 0001
allows passes (the RFC's own example brought to v1.7, optional fields absent or null, multimodal
content, embedded subagents, a deterministic dispatch step), and each thing it forbids fails
alone, named by where it is."""
from __future__ import annotations

import copy
from typing import Any

import pytest

from orchestrator.trajectory.atif import atif_problems


def rfc_example() -> dict[str, Any]:
    """The RFC's multi-step example (section IV), at v1.7."""
    return {
        "schema_version": "ATIF-v1.7",
        "session_id": "025B810F-B3A2-4C67-93C0-FE7A142A947A",
        "agent": {"name": "harbor-agent", "version": "1.0.0", "model_name": "gemini-2.5-flash", "extra": {}},
        "notes": "Initial test trajectory",
        "extra": {},
        "final_metrics": {"total_prompt_tokens": 1120, "total_completion_tokens": 124, "total_cached_tokens": 200,
                          "total_cost_usd": 0.00078, "total_steps": 3, "extra": {}},
        "steps": [
            {"step_id": 1, "timestamp": "2025-10-11T10:30:00Z", "source": "user",
             "message": "What is the current trading price of Alphabet (GOOGL)?", "extra": {}},
            {"step_id": 2, "timestamp": "2025-10-11T10:30:02Z", "source": "agent", "model_name": "gemini-2.5-flash",
             "reasoning_effort": "medium", "message": "I will search.", "reasoning_content": "Two data points.",
             "tool_calls": [{"tool_call_id": "call_price_1", "function_name": "financial_search",
                             "arguments": {"ticker": "GOOGL", "metric": "price"}},
                            {"tool_call_id": "call_volume_2", "function_name": "financial_search",
                             "arguments": {"ticker": "GOOGL", "metric": "volume"}, "extra": {"timeout_s": 5}}],
             "observation": {"results": [{"source_call_id": "call_price_1", "content": "GOOGL is at $185.35"},
                                         {"source_call_id": "call_volume_2", "content": "1.5M shares", "extra": {"score": 0.9}}]},
             "metrics": {"prompt_tokens": 520, "completion_tokens": 80, "cached_tokens": 200, "cost_usd": 0.00045},
             "llm_call_count": 1},
            {"step_id": 3, "timestamp": "2025-10-11T10:30:05+00:00", "source": "agent", "model_name": "gemini-2.5-flash",
             "reasoning_effort": 0.2, "message": "GOOGL is trading at $185.35.",
             "metrics": {"prompt_tokens": 600, "completion_tokens": 44, "completion_token_ids": [1722, 310],
                         "logprobs": [-0.1, -0.05], "cost_usd": 0.00033, "extra": {"reasoning_tokens": 12}}},
        ],
    }


def test_the_rfc_example_is_valid() -> None:
    assert atif_problems(rfc_example()) == []


def _allowed() -> list[tuple[str, Any]]:
    def minimal(d: dict[str, Any]) -> None:
        for k in ("session_id", "notes", "extra", "final_metrics"):
            d.pop(k)
        d["agent"] = {"name": "a", "version": "1"}

    def nulls(d: dict[str, Any]) -> None:
        d["steps"][0].update(timestamp=None, extra=None)
        d["steps"][1].update(observation=None, metrics=None, reasoning_content=None, tool_calls=None, llm_call_count=None)
        d.update(notes=None, final_metrics=None, continued_trajectory_ref=None, trajectory_id=None)

    def multimodal(d: dict[str, Any]) -> None:
        d["steps"][0]["message"] = [{"type": "text", "text": "look"},
                                    {"type": "image", "source": {"media_type": "image/png", "path": "images/a.png"}}]
        d["steps"][1]["observation"]["results"][0]["content"] = [{"type": "text", "text": "ok"}]

    def dispatch(d: dict[str, Any]) -> None:  # v1.7: a deterministic (non-LLM) agent step
        d["steps"][1].update(llm_call_count=0)
        d["steps"][1].pop("metrics")
        d["steps"][1].pop("reasoning_content")

    def system_observation(d: dict[str, Any]) -> None:  # v1.2: system steps may carry observations
        d["steps"].insert(0, {"step_id": 1, "source": "system", "message": "reset",
                              "observation": {"results": [{"content": "environment reset"}]}})
        for i, s in enumerate(d["steps"], 1):
            s["step_id"] = i
        d["steps"][3]["observation"] = {"results": [{"content": "no tool call"}]}

    def subagents(d: dict[str, Any]) -> None:
        child = copy.deepcopy(rfc_example())
        child["trajectory_id"] = "child-1"
        child.pop("session_id")
        d["subagent_trajectories"] = [child]
        d["steps"][1]["observation"]["results"][1] = {"source_call_id": "call_volume_2",
                                                      "subagent_trajectory_ref": [{"trajectory_id": "child-1"}]}

    def no_session(d: dict[str, Any]) -> None:  # v1.7 made session_id optional
        d.pop("session_id")
        d["trajectory_id"] = "t-1"

    return [("minimal", minimal), ("explicit nulls", nulls), ("multimodal", multimodal), ("dispatch step", dispatch),
            ("system observation", system_observation), ("embedded subagent", subagents), ("no session_id", no_session)]


@pytest.mark.parametrize(("name", "change"), _allowed(), ids=[n for n, _ in _allowed()])
def test_what_the_rfc_allows_passes(name: str, change: Any) -> None:
    doc = rfc_example()
    change(doc)
    assert atif_problems(doc) == [], name


def _forbidden() -> list[tuple[str, Any, str]]:
    def s(i: int, **kw: Any) -> Any:
        return lambda d: d["steps"][i].update(**kw)

    def drop(path: tuple[Any, ...], key: str) -> Any:
        def f(d: dict[str, Any]) -> None:
            node: Any = d
            for p in path:
                node = node[p]
            node.pop(key)
        return f

    def bad_ref(d: dict[str, Any]) -> None:
        d["steps"][1]["observation"]["results"][0]["source_call_id"] = "call_nowhere"

    def sub_without_id(d: dict[str, Any]) -> None:
        d["subagent_trajectories"] = [copy.deepcopy(rfc_example())]

    def sub_twice(d: dict[str, Any]) -> None:
        child = rfc_example() | {"trajectory_id": "c"}
        d["subagent_trajectories"] = [child, copy.deepcopy(child)]

    def ref_session_only(d: dict[str, Any]) -> None:  # v1.7: a session_id alone no longer resolves
        d["steps"][1]["observation"]["results"][0]["subagent_trajectory_ref"] = [{"session_id": "s"}]

    return [
        ("old version", lambda d: d.update(schema_version="ATIF-v1.6"), "schema_version"),
        ("no agent", drop((), "agent"), "agent"),
        ("no agent version", drop(("agent",), "version"), "version"),
        ("no steps", lambda d: d.update(steps=[]), "steps"),
        ("no message", drop(("steps", 0), "message"), "message"),
        ("unknown source", s(0, source="tool"), "source"),
        ("step ids skip", s(2, step_id=4), "step_id"),
        ("step ids from zero", lambda d: [st.update(step_id=st["step_id"] - 1) for st in d["steps"]], "step_id"),
        ("unknown step field", s(1, thoughts="x"), "thoughts"),
        ("unknown root field", lambda d: d.update(verdict="pass"), "verdict"),
        ("tool calls on a user step", s(0, tool_calls=[{"tool_call_id": "x", "function_name": "f", "arguments": {}}]), "steps/0"),
        ("metrics on a user step", s(0, metrics={"prompt_tokens": 1}), "steps/0"),
        ("model on a system step", s(0, source="system", model_name="m"), "steps/0"),
        ("arguments not an object", lambda d: d["steps"][1]["tool_calls"][0].update(arguments="ticker=GOOGL"), "arguments"),
        ("tool call without id", drop(("steps", 1, "tool_calls", 0), "tool_call_id"), "tool_call_id"),
        ("result names no call", bad_ref, "source_call_id"),
        ("negative tokens", lambda d: d["steps"][1]["metrics"].update(prompt_tokens=-1), "prompt_tokens"),
        ("tokens as text", lambda d: d["steps"][1]["metrics"].update(completion_tokens="80"), "completion_tokens"),
        ("dispatch step with metrics", s(1, llm_call_count=0), "steps/1"),
        ("timestamp not ISO 8601", s(0, timestamp="yesterday"), "timestamp"),
        ("embedded subagent without trajectory_id", sub_without_id, "trajectory_id"),
        ("embedded subagents share an id", sub_twice, "trajectory_ids repeat"),
        ("subagent ref by session only", ref_session_only, "subagent_trajectory_ref"),
        ("image without source", lambda d: d["steps"][0].update(message=[{"type": "image"}]), "message"),
    ]


@pytest.mark.parametrize(("name", "change", "where"), _forbidden(), ids=[n for n, _, _ in _forbidden()])
def test_what_the_rfc_forbids_fails(name: str, change: Any, where: str) -> None:
    doc = rfc_example()
    change(doc)
    problems = atif_problems(doc)
    assert problems, name
    assert any(where in p for p in problems), problems
